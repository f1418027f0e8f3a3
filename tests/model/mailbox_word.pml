/*
 * mailbox_word.pml -- the library's one-word Mailbox<T> (sync/include/TC/Synchronization/
 * Mailbox.h): EMPTY, FULL, LOCKED or the suspended taker's handle in one atomic word, a value
 * slot owned by FULL or by whoever locked the word, and a handoff slot that only the Put which
 * claimed the suspended taker writes and only the resumed taker reads.
 *
 * Two putter threads, A putting 1 then 2 and B putting 3, race one taker, which takes until
 * every value is taken or gone (replaced by a later Put); each round it picks an untimed take
 * (Take(), or co_await TakeAsync()) or a timed one (Take(timeout), co_await TakeAsync(timeout)),
 * whose timer may fire at any moment after the publication, at most MAXFIRE times in a run.
 * After its last take returns the taker destroys the mailbox. Proves, under sequential
 * consistency:
 *   - every handle is resumed exactly once: by the Put that claimed it, by its own OnSuspended
 *     (the word was FULL), or by the timer after OnTimeout won it; never by two of them;
 *   - a taker resumed other than by its timer finds a value at once (the handoff, or the word
 *     FULL): the one TryTake in TakeAwaiter::await_resume never comes back empty;
 *   - conservation: every value is taken exactly once or reported replaced by the Put that
 *     replaced it (replaced returns + values taken == puts); each putter's values come in order;
 *   - the value slot is touched only by whoever moved the word to LOCKED, until its store of
 *     FULL or EMPTY unlocks it (a ghost `holder` checks it);
 *   - no lost wake-up and no spin that never ends: every process finishes (else invalid end
 *     state; a spin on LOCKED is modelled as a wait for the word to change, so a lock never
 *     released is a deadlock, not a silent cycle);
 *   - lifetime: no Put, OnSuspended or OnTimeout touches the word or the slots once the taker's
 *     last Take has returned, so the taker may destroy the mailbox right then.
 * The taker stops when taken + gone == NPUT, where `gone` counts values a Put has moved out of
 * the slot to replace them -- the harness's exact knowledge of what will never arrive (a
 * program learns it later, from Put's return). At that point every Put has made its last access:
 * a taken value's Put stored FULL or resumed the taker first, a gone one's Put stored FULL
 * before its replacer locked the word, and the replacer's own value is itself taken or gone.
 *
 * Kernel abstraction (the timer-node protocol itself is proved in timed_wait.pml): a handle is
 * a number; SuspendTask(For) spawns OnSuspended as a process of its own (the scheduler thread;
 * a converted thread or a coroutine's await_suspend runs it on the taker's own thread, which
 * the separate process covers), followed by the kernel's ArmTimer. The timer fires only once
 * ArmTimer ran and only if no ResumeTask came first; a Put's resume and a successful OnTimeout
 * exclude each other (the CAS on the word); the wait returns after the resume and, if the timer
 * started firing, after it finished (SettleTimer). compare_exchange_weak never fails
 * spuriously here (a spurious failure is a retry with the same word). Handles are never reused,
 * whereas a taker's entry address is the same from one wait to the next: a Put that loaded the
 * old wait's handle and claims the next wait with its CAS claims a taker that is suspended and
 * published, the same as a retry would; the timer cannot act on a reused address, since the
 * wait settles it before returning. Not modelled: Take(timeout) with no time left, which
 * returns TryTake() without suspending (a TryTake that finds nothing changes nothing).
 *
 * Variants (spin -D...):
 *   BROKEN_LOADSTORE  TryTake locks a FULL word with a plain store after its load instead of the
 *                     CAS: a replacing Put that locks it in between shares the slot with it.
 *   BROKEN_TIMEOUT    OnTimeout stores EMPTY and returns true without the CAS: the timer also
 *                     resumes a taker a Put has claimed (double resume), or drops a value.
 *   BROKEN_LATE       a claiming Put resumes the taker before it writes the handoff: the taker
 *                     finds nothing (await_resume's check), or returns and destroys the mailbox
 *                     before the write.
 *   BROKEN_UNLOCK     a claiming Put locks the word (instead of emptying it), writes the handoff,
 *                     resumes the taker and only then unlocks: the taker may take the handoff,
 *                     return and destroy the mailbox before that store (access after destruction).
 *   BROKEN_PUBLISH    OnSuspended publishes with a load and a plain store instead of the CAS
 *                     from EMPTY: a Put that fills the slot in between is overwritten by the
 *                     handle (the value is lost, the taker never resumed).
 *   NOSPIN            (passes) OnSuspended resumes its taker when it sees LOCKED instead of
 *                     waiting the lock out: harmless, because LOCKED seen by a suspended taker's
 *                     OnSuspended is always a Put on its way to FULL, and the resumed taker's
 *                     TryTake waits the lock out itself. OnSuspended's wait is a choice (spin a
 *                     few instructions rather than reschedule), not what makes await_resume safe.
 */

#ifndef NA
#define NA       2      /* putter A puts 1 .. NA */
#endif
#ifndef NPUT
#define NPUT     3      /* putter B puts NA+1 .. NPUT */
#endif
#ifndef MAXFIRE
#define MAXFIRE  1      /* timer firings in a run (each a timed wait's deadline passing) */
#endif

#define EMPTY    0      /* kEmpty */
#define FULL     1      /* kFull */
#define LOCKED   2      /* kLocked */
#define FIRSTH   3      /* handles FIRSTH, FIRSTH+1, ...: IsWaiter(word) is word > kLocked */
/* every wait ends in a take (asserted) or a timeout: at most NPUT + MAXFIRE handles */
#define MAXH     (FIRSTH + NPUT + MAXFIRE)

/* who resumed a handle */
#define BY_PUT   1      /* the Put that claimed it, with the value in the handoff */
#define BY_SELF  2      /* its own OnSuspended, which found the word FULL */
#define BY_TIMER 3      /* the timer, after OnTimeout returned true */

byte word = EMPTY;      /* Mailbox::word_ (one std::atomic<std::uintptr_t>) */
byte slot;              /* Mailbox::value_   (0 = std::nullopt) */
byte handoff;           /* Mailbox::handoff_ (0 = std::nullopt) */
bool destroyed;         /* the mailbox's storage is gone */
byte holder;            /* ghost: _pid of whoever moved the word to LOCKED (0: nobody) */

byte nextHandle = FIRSTH;
byte resumed[MAXH];     /* how many times each handle was resumed */
byte resumer[MAXH];     /* BY_PUT, BY_SELF or BY_TIMER */
bool armed[MAXH];       /* the kernel's ArmTimer ran (after OnSuspended returned) */
bool firing[MAXH];      /* the timer took the node and has not finished (Firing, not Done) */
bool settled[MAXH];     /* SuspendTaskFor settled the timer: it will not fire any more */
byte fires;             /* timer firings so far (bounded by MAXFIRE) */

byte taken;             /* values the taker has taken */
byte gone;              /* values a Put moved out of the slot to replace them */
byte replacedRet;       /* Puts that returned true */
byte takenMark[NPUT + 1];
byte lostMark[NPUT + 1];
byte lastA;             /* the last value of putter A taken: A's values come in order */

/* TC::ResumeTask(handle), or the timer's resume: the waiter becomes runnable, once. */
inline Resume(r_h, r_by)
{
    d_step {
        assert(r_h >= FIRSTH && r_h < nextHandle); assert(resumed[r_h] == 0);
        resumed[r_h]++; resumer[r_h] = r_by
    }
}

/* The taker got value g_v: count it, once, and in each putter's order; then forget the
   round's locals (fewer states). */
inline Got(g_v, g_w, g_ok, g_h)
{
    d_step {
        assert(g_v >= 1 && g_v <= NPUT);
        assert(takenMark[g_v] == 0); takenMark[g_v]++; taken++;
        if
        :: g_v <= NA -> assert(g_v > lastA); lastA = g_v
        :: else
        fi;
        g_v = 0; g_w = 0; g_ok = false; g_h = 0
    }
}

/*
 * Mailbox::Put(value), any thread. p_rep: its return value (a value not yet taken replaced).
 */
inline Put(p_v, p_w, p_ok, p_old, p_rep)
{
    /* Put 1: word_.load(relaxed) */
    d_step { assert(!destroyed); p_w = word };
    do
    /* Put 2: word == kLocked: SpinPause and reload, until another Put or the take unlocks */
    :: p_w == LOCKED -> d_step { word != LOCKED; assert(!destroyed); p_w = word }
    :: p_w != LOCKED ->
        /* Put 3: CAS(word, IsWaiter(word) ? kEmpty : kLocked): claim the taker or lock the
           slot; on failure the word is reloaded into p_w */
        d_step {
            assert(!destroyed);
            if
            :: word == p_w ->
                if
#ifndef BROKEN_UNLOCK
                :: p_w >= FIRSTH -> word = EMPTY
#else
                :: p_w >= FIRSTH -> word = LOCKED; holder = _pid   /* broken: claim by locking */
#endif
                :: else -> word = LOCKED; holder = _pid
                fi;
                p_ok = true
            :: else -> p_w = word; p_ok = false
            fi
        };
        if
        :: p_ok -> break
        :: else
        fi
    od;
    if
    :: p_w >= FIRSTH ->
        /* the taker is ours: it stays suspended until our ResumeTask */
#ifndef BROKEN_LATE
        /* Put 4: handoff_.emplace(value), while the taker is still suspended */
        d_step { assert(!destroyed); assert(handoff == 0); handoff = p_v };
        /* Put 5: ResumeTask(AsTask(word)): no access to the mailbox after it */
        Resume(p_w, BY_PUT);
#ifdef BROKEN_UNLOCK
        d_step { assert(!destroyed); holder = 0; word = EMPTY };   /* ... unlock after resuming */
#endif
#else
        Resume(p_w, BY_PUT);                                    /* broken: resume first ... */
        d_step { assert(!destroyed); assert(handoff == 0); handoff = p_v };  /* ... write after */
#endif
        p_rep = false
    :: else ->
        p_rep = (p_w == FULL);
        if
        /* Put 6: replaced: old.emplace(std::move(*value_)) -- the old value leaves the slot */
        :: p_rep ->
            d_step {
                assert(!destroyed); assert(holder == _pid);
                p_old = slot; assert(p_old != 0); lostMark[p_old]++; gone++
            }
        :: else
        fi;
        /* Put 7: value_.emplace(value) */
        d_step { assert(!destroyed); assert(holder == _pid); slot = p_v };
        /* Put 8: word_.store(kFull, release) -- the last access; then return replaced */
        d_step { assert(!destroyed); assert(holder == _pid); holder = 0; word = FULL }
    fi
}

/*
 * Mailbox::TryTake(), the taker only. tt_v: the value taken (0 = std::nullopt).
 */
inline TryTake(tt_v, tt_w, tt_ok)
{
    /* TryTake 1: if (handoff_) return TakeHandoff() -- a Put resumed us with a value */
    d_step { assert(!destroyed); tt_v = handoff; handoff = 0 };
    if
    :: tt_v != 0
    :: else ->
        /* TryTake 2: word_.load(relaxed) */
        d_step { assert(!destroyed); tt_w = word };
        do
        /* TryTake 3: word == kLocked: SpinPause and reload (a Put is moving a value in) */
        :: tt_w == LOCKED -> d_step { word != LOCKED; assert(!destroyed); tt_w = word }
        /* TryTake 4: word != kFull: return std::nullopt */
        :: tt_w != LOCKED && tt_w != FULL -> tt_ok = false; break
        :: tt_w == FULL ->
#ifndef BROKEN_LOADSTORE
            /* TryTake 5: CAS(kFull -> kLocked, acquire); on failure reload into tt_w */
            d_step {
                assert(!destroyed);
                if
                :: word == FULL -> word = LOCKED; holder = _pid; tt_ok = true
                :: else -> tt_w = word; tt_ok = false
                fi
            };
            if
            :: tt_ok -> break
            :: else
            fi
#else
            /* broken: the load saw FULL; a plain store locks, whatever happened since */
            d_step { assert(!destroyed); word = LOCKED; holder = _pid }; tt_ok = true; break
#endif
        od;
        if
        :: tt_ok ->
            /* TryTake 6: taken(std::move(*value_)) */
            d_step { assert(!destroyed); assert(holder == _pid); tt_v = slot; assert(tt_v != 0) };
            /* TryTake 7: value_.reset() */
            d_step { assert(!destroyed); assert(holder == _pid); slot = 0 };
            /* TryTake 8: word_.store(kEmpty, release) */
            d_step { assert(!destroyed); assert(holder == _pid); holder = 0; word = EMPTY }
        :: else
        fi
    fi
}

/*
 * Mailbox::OnSuspended(task), on the scheduler thread once the taker is off the processor;
 * then, for a timed wait, the kernel's ArmTimer (after which the timer may fire).
 */
proctype OnSuspended(byte h; bool timed)
{
    byte w;
    bool ok;
    /* OnSuspended 1: word_.load(relaxed) */
    d_step { assert(!destroyed); w = word };
    do
    /* OnSuspended 2: kFull: ResumeTask(task), never published -- the load was the last access */
    :: w == FULL -> Resume(h, BY_SELF); break
    :: w == LOCKED ->
#ifndef NOSPIN
        /* OnSuspended 3: kLocked: SpinPause and reload -- wait out the Put's move */
        d_step { word != LOCKED; assert(!destroyed); w = word }
#else
        Resume(h, BY_SELF); break   /* variant: resume at once, TryTake waits the lock out */
#endif
    :: w != FULL && w != LOCKED ->
        /* OnSuspended 4: TC_CHECK(word == kEmpty): one taker */
        assert(w == EMPTY);
#ifndef BROKEN_PUBLISH
        /* OnSuspended 5: CAS(kEmpty -> self, release): success is the last access */
        d_step {
            assert(!destroyed);
            if
            :: word == EMPTY -> word = h; ok = true
            :: else -> w = word; ok = false
            fi
        };
        if
        :: ok -> break
        :: else
        fi
#else
        d_step { assert(!destroyed); word = h }; break  /* broken: a store after the load */
#endif
    od;
    /* the kernel's ArmTimer: from here on the timer may fire (if no ResumeTask came first);
       the locals are cleared for the state space (a finished process stays in the vector) */
    atomic { armed[h] = timed; w = 0; ok = false }
}

/*
 * The timer of one timed wait: fires once the node is armed, if the deadline passes (a free
 * choice, at most MAXFIRE times in a run) before a ResumeTask; else it is cancelled when the
 * wait settles it. Fire: OnTimeout; true -> the kernel resumes the taker (timed out).
 */
proctype Timer(byte h)
{
    bool ok;
    if
    :: atomic { fires < MAXFIRE && armed[h] && resumed[h] == 0 -> firing[h] = true; fires++ };
#ifndef BROKEN_TIMEOUT
        /* OnTimeout 1: CAS(self -> kEmpty, acq_rel): the timer's claim against a Put's */
        d_step {
            assert(!destroyed);
            if
            :: word == h -> word = EMPTY; ok = true
            :: else -> ok = false
            fi
        };
#else
        d_step { assert(!destroyed); word = EMPTY; ok = true };    /* broken: no CAS */
#endif
        if
        :: ok -> Resume(h, BY_TIMER)    /* timed out: SuspendTaskFor returns false */
        :: else                         /* a Put claimed the taker; its ResumeTask ends the wait */
        fi;
        atomic { firing[h] = false; ok = false }    /* Done */
    :: settled[h]                       /* the wait ended first: the node left the heap */
    fi
}

/*
 * One take, timed or not, as Take() / Take(timeout) and the awaiters run it: TryTake; if
 * nothing, suspend; once resumed, TryTake once more (await_resume; Take's loop). Resumed by a
 * Put or by OnSuspended, that TryTake must find the value; timed out (SuspendTaskFor returned
 * false), it is the last TryTake, and finds one only if a Put came after the timeout.
 */
inline TakeOnce(k_timed, k_v, k_w, k_ok, k_h)
{
    TryTake(k_v, k_w, k_ok);
    if
    :: k_v != 0 -> Got(k_v, k_w, k_ok, k_h)
    :: else ->
        /* SuspendTask(this) / SuspendTaskFor(this, left): off the processor, OnSuspended */
        d_step { k_h = nextHandle; nextHandle++; assert(nextHandle <= MAXH) };
        if
        :: k_timed -> atomic { run Timer(k_h); run OnSuspended(k_h, true) }
        :: else -> run OnSuspended(k_h, false)
        fi;
        (resumed[k_h] > 0);     /* blocked until resumed */
        if
        /* SettleTimer: wait for a firing timer to finish; then it never fires */
        :: k_timed -> d_step { !firing[k_h]; settled[k_h] = true }
        :: else
        fi;
        TryTake(k_v, k_w, k_ok);
        if
        :: resumer[k_h] == BY_TIMER ->
            if
            :: k_v != 0 -> Got(k_v, k_w, k_ok, k_h)     /* a Put raced the timeout */
            :: else                     /* timed out: std::nullopt */
            fi
        :: else ->
            /* TakeAwaiter::await_resume's TC_CHECK: a resumed taker finds the value */
            assert(k_v != 0); Got(k_v, k_w, k_ok, k_h)
        fi
    fi
}

proctype Taker()
{
    byte v, w, h;
    bool ok, timed;
    do
    :: taken + gone == NPUT -> break    /* nothing more will come */
    :: else ->
        if
        :: timed = false
        :: timed = true
        fi;
        TakeOnce(timed, v, w, ok, h)
    od;
    /* ~Mailbox (TC_CHECK: no waiter), right after the last Take returned */
    assert(word < FIRSTH);
    destroyed = true
}

proctype Putter(byte first; byte last)
{
    byte k = first, w, old;
    bool ok, rep;
    do
    :: k <= last ->
        Put(k, w, ok, old, rep);
        if
        :: rep -> replacedRet++
        :: else
        fi;
        k++
    :: else -> break
    od
}

init
{
    byte h = FIRSTH, v = 1;
    atomic { run Taker(); run Putter(1, NA); run Putter(NA + 1, NPUT) };
    (_nr_pr == 1);      /* everyone finished: OnSuspended and timers included */
    /* every handle handed out was resumed exactly once */
    do
    :: h < nextHandle -> assert(resumed[h] == 1); h++
    :: else -> break
    od;
    /* conservation: each value taken once or replaced, and each replacement reported */
    do
    :: v <= NPUT -> assert(takenMark[v] + lostMark[v] == 1); v++
    :: else -> break
    od;
    assert(replacedRet == gone && taken + gone == NPUT);
    /* nothing left behind */
    assert(word == EMPTY && slot == 0 && handoff == 0)
}
