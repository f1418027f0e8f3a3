/*
 * event_s.pml -- the single-waiter auto-reset event AutoResetEvent_s (sync/include/TC/
 * Synchronization/AutoResetEvent_s.h), which counts Sets instead of storing a flag. Two atomics:
 *   word_      bit 0 K (a waiter is published), bit 1 R (a Reset since the last Set), bits 2..
 *              the count of Sets that found no waiter (monotonic);
 *   consumed_  (`side` here) 2*consumed+1, the count the waiter last consumed (odd); or, while
 *              the waiter publishes itself and while it is published, its entry (even). The
 *              waiter's own word: only a Set that claimed the waiter (and OnTimeout after it
 *              took the waiter back) writes it otherwise.
 * The event is set iff !(word & (K|R)) && 2*count+1 != side. A Set is one CAS (count+1 and R
 * cleared, or, if K is set, K and R cleared with the count left alone: the claim); a Reset is a
 * fetch_or of R; a pass is a load of word_ and a plain store of side (no RMW); a waiter that
 * finds the event unset stores its entry in side and publishes itself with a CAS that sets K.
 *
 * Harness: setter A sets twice and may Reset between its Sets; setter B may Reset, then sets
 * once. Each setter ends with a Set, so no Reset comes after the last Set. One waiter waits for
 * as long as some Set has not done its CAS (the harness's exact knowledge that a Set is still to
 * come; the setters run free, so every Set races every step of every wait), each wait untimed
 * (Wait(), co_await) or timed (Wait(timeout), WaitAsync(timeout)), whose timer may fire at any
 * moment after the publication, at most MAXFIRE times in a run. Once every Set has done its CAS
 * the waiter may TryWait a last time, and destroys the event. At that point every Set has made
 * its last access: a Set that counted made it with its CAS, a Set that claimed with its store of
 * side, before the ResumeTask that the returned wait came after. Proves, under sequential
 * consistency:
 *   - every handle is resumed exactly once: by the Set that claimed it, by its own OnSuspended
 *     (the event was set), or by the timer after OnTimeout won it; never by two of them;
 *   - no spurious pass: a ghost `pend` (some Set came after the last pass and the last Reset)
 *     is asserted set at every pass decided by a look at the word (TryWait's load, OnSuspended's
 *     load or failed CAS), and cleared by it; so no pass takes a Set that a Reset cancelled or
 *     that an earlier pass consumed, and passes <= Sets. A pass takes effect at that look: the
 *     store of side comes later, and a Set or Reset in between is ordered after the pass;
 *   - no lost Set: `pend` is clear at every publishing CAS, every claim (the claim is the pass
 *     of the claiming Set) and every winning OnTimeout CAS -- nobody suspends, or times out, on
 *     a set event -- and the last TryWait, after every Set, passes iff `pend` is set; at the end
 *     the concrete event (word and side) is set iff `pend` is;
 *   - no lost wake-up: an untimed wait begun while a Set is still to come returns (else invalid
 *     end state; every process must finish);
 *   - side is touched only by its owner: the waiter side (TryWait, OnSuspended, a winning
 *     OnTimeout) only while K is clear and no claim is in progress, a Set only after its claim
 *     and before the claimed waiter runs again (a ghost `owner`, handed back to the waiter when
 *     it resumes);
 *   - lifetime: no Set, OnSuspended or OnTimeout touches word_ or side once the waiter has
 *     returned from its last Wait (a `destroyed` flag, asserted at every access).
 *
 * Kernel abstraction (as mailbox_word.pml; the timer-node protocol is proved in timed_wait.pml):
 * a handle is a number; SuspendTask(For) spawns OnSuspended as a process of its own, followed by
 * the kernel's ArmTimer; the timer fires only once armed and only if no ResumeTask came first,
 * and the wait returns after its resume and, if the timer started firing, after it finished
 * (SettleTimer), so OnTimeout may run after a claiming Set resumed the waiter but never after
 * the wait returned. compare_exchange_weak never fails spuriously here (a spurious failure is a
 * retry with the same word). Handles are never reused, whereas the entry's address may be the
 * same from one wait to the next: a Set that loaded the old wait's K and claims the next wait
 * with its CAS reads the entry after the claim, so it resumes the waiter that is published then,
 * as a retry would. The count is a small number here (it never wraps in the C++: 2^62 Sets).
 * Not modelled: IsSet/IsSuspended (snapshots), Wait(timeout) with no time left (TryWait alone),
 * memory orders (argued in the C++ comments).
 *
 * Variants (spin -D...):
 *   RESTORE_ENTRY        (passes) OnSuspended restores the consumed count in side when its
 *                        publishing CAS fails, before it retries; the C++ (and the default) leave
 *                        the entry there: nobody reads side while K is clear but the waiter side.
 *   INITIALLY_SET        (passes) AutoResetEvent_s(true): the count starts at 1.
 *   BROKEN_CLAIM_COUNTS  a claiming Set also adds one to the count: the waiter it resumed then
 *                        passes again on the same Set (spurious pass).
 *   BROKEN_NO_RESTORE    a claiming Set does not store 2*count+1 in side: side still holds the
 *                        entry, which never equals a consumed count, so the next TryWait passes
 *                        on no Set (spurious pass).
 *   BROKEN_RESUME_FIRST  a claiming Set resumes the waiter before it stores side: the waiter
 *                        runs again before that store (the ownership check fails; without it,
 *                        the waiter finds its entry in side and passes on no Set, or returns
 *                        and destroys the event before the store: access after destruction).
 *   BROKEN_NO_RECHECK    OnSuspended publishes with a plain store of its loaded word | K instead
 *                        of the CAS: a Set that counted in between is overwritten (a lost Set:
 *                        the untimed wait is never resumed, or the last TryWait finds nothing).
 *   BROKEN_TIMEOUT       OnTimeout clears K with a plain store after its load instead of the
 *                        CAS: a Set that claims the waiter in between and the timer both take
 *                        it (the timer writes side under the claiming Set: the ownership check;
 *                        then both resume it, or the Set reads a count as the entry).
 *   BROKEN_PUBLISH_FIRST OnSuspended publishes (CAS sets K) before it stores its entry in side:
 *                        a Set that claims it in between resumes the consumed count read as a
 *                        handle.
 */

#ifndef MAXFIRE
#define MAXFIRE  1      /* timer firings in a run (each a timed wait's deadline passing) */
#endif
#ifndef NA
#define NA       2      /* setter A sets NA times */
#endif
#define NSETS    (NA + 1)   /* setter B sets once */

#define K        1      /* kWaiter */
#define R        2      /* kReset */
#define ONESET   4      /* kOneSet: the count is word >> 2 */
#define TAG(w)   ((((w) >> 2) * 2) + 1)    /* ConsumedTag(word): 2*count+1 */

/* Every suspension ends in a pass (each consumes a Set) or a timeout: at most NSETS + NINIT +
   MAXFIRE handles, numbered from 1 (an entry in side is 2*handle: even, never a consumed tag).
   The broken variants may use more; the bound is asserted. */
#define MAXH     (NSETS + MAXFIRE + 2)

/* who resumed a handle */
#define BY_SET   1      /* the Set that claimed it */
#define BY_SELF  2      /* its own OnSuspended, which found the event set */
#define BY_TIMER 3      /* the timer, after OnTimeout returned true */

#ifndef INITIALLY_SET
#define NINIT    0      /* Sets before the run (the constructor's) */
byte word = 0;          /* AutoResetEvent_s::word_ */
bool pend = false;      /* ghost: a Set came after the last pass and the last Reset */
#else
#define NINIT    1
byte word = ONESET;     /* AutoResetEvent_s(true): the count starts at 1 */
bool pend = true;
#endif
byte side = 1;          /* AutoResetEvent_s::consumed_: ConsumedTag(0) */
bool destroyed;         /* the event's storage is gone */
byte owner;             /* ghost: _pid of the Set that claimed the waiter, until it runs again */

byte sets;              /* ghost: Sets that did their CAS (the harness's knowledge) */
byte passes;            /* ghost: waits and TryWaits that passed (a claim is a pass) */

byte nextHandle = 1;
byte current;           /* ghost: the handle of the wait in progress (0: none suspended) */
byte resumed[MAXH];     /* how many times each handle was resumed */
byte resumer[MAXH];     /* BY_SET, BY_SELF or BY_TIMER */
bool armed[MAXH];       /* the kernel's ArmTimer ran (after OnSuspended returned) */
bool firing[MAXH];      /* the timer took the node and has not finished (Firing, not Done) */
bool settled[MAXH];     /* SuspendTaskFor settled the timer: it will not fire any more */
byte fires;             /* timer firings so far (bounded by MAXFIRE) */

/* TC::ResumeTask(handle), or the timer's resume: the waiter becomes runnable, once. */
inline Resume(r_h, r_by)
{
    d_step {
        assert(r_h >= 1 && r_h < nextHandle); assert(resumed[r_h] == 0);
        resumed[r_h]++; resumer[r_h] = r_by
    }
}

/* A pass decided by the waiter side's look at word_ (TryWait's, OnSuspended's): the event must
   be set in the abstract too. In the same atomic step as the load that decides it. */
inline Pass()
{
    assert(pend); pend = false; passes++
}

/* A waiter-side access of side: nobody else owns it (no claim in progress), K is clear. */
#define SIDE_OURS  (owner == 0 && (word & K) == 0)

/*
 * Set(): any thread. s_w: the word its CAS replaced; s_e: the claimed waiter's entry.
 */
inline Set(s_w, s_e, s_ok)
{
    /* Set 1: word_.load(relaxed) -- the CAS decides */
    d_step { assert(!destroyed); s_w = word };
    do
    :: /* Set 2: CAS(word, K ? word & ~(K|R) : (word & ~R) + kOneSet); on failure reload */
        d_step {
            assert(!destroyed);
            if
            :: word == s_w ->
                if
                :: (s_w & K) != 0 ->
                    /* the claim: the waiter published on an unset event, and nothing set it
                       since (a Set would have claimed it instead); its pass is this Set */
                    assert(!pend); assert(owner == 0); owner = _pid; passes++;
#ifndef BROKEN_CLAIM_COUNTS
                    word = s_w & ~(K | R)
#else
                    word = (s_w & ~(K | R)) + ONESET    /* broken: counts as well */
#endif
                :: else -> word = (s_w & ~R) + ONESET; pend = true
                fi;
                sets++; s_ok = true
            :: else -> s_w = word; s_ok = false
            fi
        };
        if
        :: s_ok -> break
        :: else
        fi
    od;
    if
    :: (s_w & K) != 0 ->
        /* claimed: the waiter stays suspended until our ResumeTask, side is ours till then */
        /* Set 3: SuspendedWaiter(): the entry from side */
        d_step {
            assert(!destroyed); assert(owner == _pid);
            s_e = side; assert(s_e % 2 == 0 && s_e / 2 == current)
        };
#ifndef BROKEN_RESUME_FIRST
#ifndef BROKEN_NO_RESTORE
        /* Set 4: consumed_ = ConsumedTag(word): the count the waiter published with */
        d_step { assert(!destroyed); assert(owner == _pid); side = TAG(s_w) };
#endif
        /* Set 5: ResumeTask(waiter) -- no access to the event after it */
        Resume(s_e / 2, BY_SET)
#else
        Resume(s_e / 2, BY_SET);                                    /* broken: resume first ... */
        d_step { assert(!destroyed); assert(owner == _pid); side = TAG(s_w) }  /* ... then store */
#endif
    :: else     /* counted: the CAS was the last access */
    fi;
    d_step { s_w = 0; s_e = 0; s_ok = false }   /* forget the locals (fewer states) */
}

/* Reset(): any thread. word_.fetch_or(kReset): cancels a Set not yet consumed. */
inline Reset()
{
    d_step { assert(!destroyed); word = word | R; pend = false }
}

/*
 * TryWait(): the waiter only, never suspends. t_ok: it passed.
 */
inline TryWait(t_w, t_ok)
{
    /* TryWait 1: word_.load(acquire); IsPending(word, consumed_): reads side, the waiter's own
       while K is clear (asserted), so in the same step as the load */
    d_step {
        assert(!destroyed); t_w = word;
        assert((t_w & K) == 0);         /* TC_CHECK: one waiter at a time */
        assert(SIDE_OURS);
        t_ok = ((t_w & R) == 0 && side != TAG(t_w));
        if
        :: t_ok -> Pass()
        :: else
        fi
    };
    if
    /* TryWait 2: consumed_ = ConsumedTag(word): a plain store, no RMW */
    :: t_ok -> d_step { assert(!destroyed); assert(SIDE_OURS); side = TAG(t_w); t_w = 0 }
    :: else -> t_w = 0
    fi
}

/* OnSuspended's look at the word (its load, or its failed CAS's reload): pending if no waiter,
   no Reset and the count is past the consumed one read at the start. */
inline Look(l_w, l_c, l_pass)
{
    l_w = word;
    l_pass = ((l_w & (K | R)) == 0 && TAG(l_w) != l_c);   /* IsPending(word, consumed) */
    if
    :: l_pass -> Pass()
    :: else
    fi
}

/*
 * OnSuspended(task), once the waiter is off the processor; then, for a timed wait, the
 * kernel's ArmTimer (after which the timer may fire).
 */
proctype OnSuspended(byte h; bool timed)
{
    byte w, c;
    bool ok, pass;
    /* OnSuspended 1: consumed = consumed_ (ours while no waiter is published), read once */
    d_step { assert(!destroyed); assert(SIDE_OURS); c = side; assert(c % 2 == 1) };
    /* OnSuspended 2: word_.load(acquire) */
    d_step { assert(!destroyed); Look(w, c, pass) };
    do
    :: pass ->
        /* OnSuspended 3: pending: consumed_ = ConsumedTag(word), then ResumeTask(task), never
           published -- the store is the last access */
        d_step { assert(!destroyed); assert(SIDE_OURS); side = TAG(w) };
        Resume(h, BY_SELF);
        break
    :: !pass ->
        /* OnSuspended 4: TC_CHECK(!(word & kWaiter)): one waiter */
        assert((w & K) == 0);
#ifndef BROKEN_PUBLISH_FIRST
        /* OnSuspended 5: consumed_ = entry (even), where a claiming Set will read it */
        d_step { assert(!destroyed); assert(SIDE_OURS); side = 2 * h };
#endif
#ifndef BROKEN_NO_RECHECK
        /* OnSuspended 6: CAS(word -> word | kWaiter): success publishes, the last access; on
           failure the word is reloaded and looked at again */
        d_step {
            assert(!destroyed);
            if
            :: word == w -> word = w | K; ok = true; assert(!pend)  /* published on unset */
            :: else -> Look(w, c, pass); ok = false
            fi
        };
        if
        :: ok ->
#ifdef BROKEN_PUBLISH_FIRST
            d_step { assert(!destroyed); side = 2 * h };    /* broken: the entry after the CAS */
#endif
            break
        :: else ->
#ifdef RESTORE_ENTRY
            /* variant: consumed_ = consumed, restored before retrying */
            d_step { assert(!destroyed); assert(SIDE_OURS); side = c }
#else
            skip        /* as the C++: the entry stays in side while we retry */
#endif
        fi
#else
        d_step { assert(!destroyed); word = w | K }; break     /* broken: a store after the load */
#endif
    od;
    /* the kernel's ArmTimer: from here on the timer may fire (if no ResumeTask came first);
       the locals are cleared for the state space (a finished process stays in the vector) */
    atomic { armed[h] = timed; w = 0; c = 0; ok = false; pass = false }
}

/*
 * The timer of one timed wait: fires once the node is armed, if the deadline passes (a free
 * choice, at most MAXFIRE times in a run) before a ResumeTask; else it is cancelled when the
 * wait settles it. Fire: OnTimeout; true -> the kernel resumes the waiter (timed out).
 */
proctype Timer(byte h)
{
    byte w;
    bool ok;
    if
    :: atomic { fires < MAXFIRE && armed[h] && resumed[h] == 0 -> firing[h] = true; fires++ };
        /* OnTimeout 1: word_.load(relaxed) -- the CAS decides */
        d_step { assert(!destroyed); w = word };
        do
        /* OnTimeout 2: !(word & kWaiter): a Set claimed the waiter and resumes it: false */
        :: (w & K) == 0 -> ok = false; break
        :: (w & K) != 0 ->
#ifndef BROKEN_TIMEOUT
            /* OnTimeout 3: CAS(word -> word & ~kWaiter): takes the waiter back against a Set's
               claim; on failure reload (a Reset, or a Set's claim) */
            d_step {
                assert(!destroyed);
                if
                :: word == w -> word = w & ~K; ok = true; assert(!pend)
                :: else -> w = word; ok = false
                fi
            };
            if
            :: ok -> break
            :: else
            fi
#else
            d_step { assert(!destroyed); word = w & ~K }; ok = true; break   /* broken: no CAS */
#endif
        od;
        if
        :: ok ->
            /* OnTimeout 4: consumed_ = ConsumedTag(word): the entry leaves side; return true */
            d_step { assert(!destroyed); assert(SIDE_OURS); side = TAG(w) };
            Resume(h, BY_TIMER)         /* timed out: SuspendTaskFor returns false */
        :: else
        fi;
        atomic { firing[h] = false; w = 0; ok = false }     /* Done */
    :: settled[h]                       /* the wait ended first: the node left the heap */
    fi
}

/*
 * Wait() / Wait(timeout): TryWait; if it fails, suspend. k_ok: the wait returned true.
 */
inline WaitOnce(k_timed, k_w, k_ok, k_h)
{
    TryWait(k_w, k_ok);
    if
    :: k_ok
    :: else ->
        /* SuspendTask(this) / SuspendTaskFor(this, timeout): off the processor, OnSuspended */
        d_step { k_h = nextHandle; nextHandle++; assert(nextHandle <= MAXH); current = k_h };
        if
        :: k_timed -> atomic { run Timer(k_h); run OnSuspended(k_h, true) }
        :: else -> run OnSuspended(k_h, false)
        fi;
        /* blocked until resumed; then it runs again, and side is the waiter's again */
        d_step { resumed[k_h] > 0; owner = 0; current = 0 };
        if
        /* SettleTimer: wait for a firing timer to finish; then it never fires */
        :: k_timed -> d_step { !firing[k_h]; settled[k_h] = true }
        :: else
        fi;
        /* returns true unless the timer resumed it (the pass, a claim or OnSuspended's, is
           counted where it was decided) */
        k_h = 0
    fi;
    k_ok = false        /* forget the locals (fewer states) */
}

proctype Waiter()
{
    byte w, h;
    bool ok, timed;
    bool expect;
    do
    :: sets == NSETS -> break           /* no Set to come */
    :: else ->
        if
        :: timed = false
        :: timed = true
        fi;
        WaitOnce(timed, w, ok, h);
        timed = false
    od;
    if
    :: /* a last TryWait after every Set: passes iff a Set came after the last pass and the
          last Reset -- no Set was lost */
        expect = pend;
        TryWait(w, ok);
        assert(ok == expect)
    :: skip
    fi;
    /* ~AutoResetEvent_s (TC_CHECK: no waiter), right after the last Wait returned */
    assert((word & K) == 0);
    destroyed = true
}

proctype SetterA()
{
    byte k = 1, w, e;
    bool ok;
    do
    :: k <= NA ->
        Set(w, e, ok); k++;
        if
        :: k <= NA -> Reset()   /* between two of its Sets: never after its last */
        :: skip
        fi
    :: else -> break
    od
}

proctype SetterB()
{
    byte w, e;
    bool ok;
    if
    :: Reset()
    :: skip
    fi;
    Set(w, e, ok)
}

init
{
    byte h = 1;
    atomic { run Waiter(); run SetterA(); run SetterB() };
    (_nr_pr == 1);      /* everyone finished: OnSuspended and timers included */
    /* every handle handed out was resumed exactly once */
    do
    :: h < nextHandle -> assert(resumed[h] == 1); h++
    :: else -> break
    od;
    assert(sets == NSETS && passes <= NSETS + NINIT);
    /* nothing left behind: no waiter, side a consumed count, the event set iff `pend` */
    assert((word & K) == 0 && side % 2 == 1);
    assert(((word & R) == 0 && side != TAG(word)) == pend)
}
