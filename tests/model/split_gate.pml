/*
 * split_gate.pml -- SplitGate, the counting gate under Channel
 * (sync/include/TC/Synchronization/detail/SplitGate.h, sync/src/SplitGate.cpp): two monotonic
 * counters, released_ (written by releasers) and taken_ (written by acquirers) with
 * taken_.seen, the last look at released_ some acquirer shared; waiting_, the acquirers counted
 * as waiting, and beside it the queue (waiting_.queue), a SemaphoreCore holding the permits
 * releases parked for waiters.
 *
 * Two acquirers, A taking KA permits (each round a timed or an untimed Acquire; its wait may time
 * out at any moment, at most MAXFIRE times in a run; a timed-out round is tried again) and B
 * taking KB (untimed), race two releasers, Release(N1) and Release(N2), on a gate made with INIT
 * permits, INIT + N1 + N2 == KA + KB. With CLOSE a closer runs Close at any moment and an
 * acquirer stops at its first Closed. Proves, under sequential consistency (every access below
 * is seq_cst or an RMW in the code, or harmless when stale: taken_.seen):
 *   - no lost wake-up: every process finishes (else an invalid end state): no acquirer waits on
 *     the queue while a permit sits in the counters with nobody to hand it over;
 *   - conservation: INIT + N1 + N2 == Acquires that returned Acquired + the permits left in the
 *     counters + the permits parked in the queue (a grant to a waiter that found a permit itself,
 *     or timed out, is parked, not lost; none is made twice);
 *   - taken_ never passes released_ (an acquire never takes a permit nobody released).
 *
 * Abstractions. The queue is a semaphore whose own protocol semaphore_word.pml proves: a waiter
 * blocks until a parked permit is there (takes it in one step), the gate is closed (Closed) or,
 * timed, its timer fires (TimedOut); its TryAcquire takes a parked permit in one step. The
 * spin before waiting (SpinForPermit) is more TryTakeCounted calls, which change nothing but
 * taken_.seen when they fail: left out. compare_exchange_weak does not fail spuriously here.
 *
 * Variants (spin -D...):
 *   CLOSE                   (passes) a closer runs Close at any moment.
 *   BROKEN_LOOK_FIRST       the waiter looks at released_ before it counts itself in waiting_:
 *                           a release in between sees no waiter and grants nothing, and the
 *                           waiter sleeps beside the permit (a lost wake-up).
 *   BROKEN_GRANT_UNTAKEN    Grant parks a permit without taking it from the counters: the same
 *                           permit can be taken twice (conservation fails).
 *   BROKEN_NO_REGRANT       a parked permit taken by a TryAcquire (not a waiter) is not
 *                           replaced while waiters are counted: the grant meant for a waiter
 *                           is gone and a permit released with it stays in the counters beside
 *                           the sleeping waiter (KA=2 N1=2; found by this model).
 *   BROKEN_STALE_SEEN       TryTakeCounted trusts taken_.seen as "nothing left" instead of
 *                           looking at released_ again: the waiter's look is not a look (a
 *                           lost wake-up).
 */

#ifndef INIT
#define INIT     0
#endif
#ifndef N1
#define N1       1
#endif
#ifndef N2
#define N2       1
#endif
#ifndef KA
#define KA       1
#endif
#ifndef KB
#define KB       1
#endif
#ifndef MAXFIRE
#define MAXFIRE  1
#endif

#define TOTAL    (INIT + N1 + N2)
#define ACQUIRED 1
#define CLOSED   2
#define TIMEDOUT 3

byte released = INIT;   /* released_ */
byte taken;             /* taken_ */
byte seen;              /* taken_.seen */
byte waiting;           /* waiting_ */
byte parked;            /* the permits parked in waiting_.queue */
bool closed;            /* waiting_.queue's closed_ */
byte fires;             /* timeouts so far */
byte got;               /* Acquires that returned Acquired */
byte done;              /* processes finished */

/* TryTakeCounted(): tt_ok = 1 if it took a permit from the counters. */
inline TryTakeCounted(tt_ok, tt_t, tt_s)
{
    tt_ok = 0;
    tt_t = taken;                       /* taken_.load(relaxed) */
    tt_s = seen;                        /* taken_.seen.load(acquire) */
    do
    :: tt_t >= tt_s ->
#ifndef BROKEN_STALE_SEEN
        tt_s = released;                /* released_.load(seq_cst): the look */
#endif
        if
        :: tt_t >= tt_s -> break        /* nothing there */
        :: else -> seen = tt_s          /* taken_.seen.store(release): an older one is fine */
        fi
    :: else ->
        /* taken_.compare_exchange_weak(t, t + 1) */
        if
        :: atomic { taken == tt_t -> taken++; assert(taken <= released) }; tt_ok = 1; break
        :: atomic { taken != tt_t -> tt_t = taken }
        fi
    od;
    tt_t = 0; tt_s = 0                  /* dead from here: fewer states */
}

/* Grant(n): parks up to n permits (no more than the waiters seen in gr_w) in the queue, each
   taken from the counters first. */
inline Grant(gr_n, gr_w, gr_ok, gr_t, gr_s)
{
    do
    :: gr_n > 0 && gr_w > 0 ->
#ifdef BROKEN_GRANT_UNTAKEN
        gr_ok = 1;
#else
        TryTakeCounted(gr_ok, gr_t, gr_s);
#endif
        if
        :: gr_ok -> parked++; gr_n--; gr_w--   /* waiting_.queue.Release(1) */
        :: else -> break
        fi
    :: else -> break
    od
}

/* TryAcquire(): counted, else a parked one; a parked one taken while waiters are counted is
   replaced from the counters (TryTakeParked). */
inline TryAcquire(ta_ok, ta_t, ta_s, ta_n, ta_w)
{
    TryTakeCounted(ta_ok, ta_t, ta_s);
    if
    :: ta_ok == 0 ->
        atomic {
            if
            :: parked > 0 -> parked--; ta_ok = 1
            :: else
            fi
        };
#ifndef BROKEN_NO_REGRANT
        if
        :: ta_ok ->
            ta_w = waiting;                 /* waiting_.load(seq_cst) */
            if
            :: ta_w > 0 -> ta_n = 1; Grant(ta_n, ta_w, ta_ok, ta_t, ta_s); ta_ok = 1
            :: else
            fi
        :: else
        fi
#endif
    :: else
    fi
}

/* Acquire() or, timed, Acquire(timeout): ac_r gets the result. */
inline Acquire(ac_timed, ac_r, ac_ok, ac_t, ac_s, ac_n, ac_w)
{
    TryAcquire(ac_ok, ac_t, ac_s, ac_n, ac_w);
    if
    :: ac_ok -> ac_r = ACQUIRED
    :: else ->
#ifdef BROKEN_LOOK_FIRST
        TryTakeCounted(ac_ok, ac_t, ac_s);
        waiting++;
#else
        waiting++;                      /* StartWaiting: fetch_add(seq_cst) */
        TryTakeCounted(ac_ok, ac_t, ac_s);
#endif
        if
        :: ac_ok -> ac_r = ACQUIRED
        :: else ->
            /* waiting_.queue.Acquire(): blocks until one of these */
            if
            :: atomic { parked > 0 -> parked--; ac_r = ACQUIRED }
#ifdef CLOSE
            :: atomic { closed && parked == 0 -> ac_r = CLOSED }
#endif
            :: atomic { ac_timed && fires < MAXFIRE -> fires++; ac_r = TIMEDOUT }
            fi
        fi;
        waiting--;                      /* StopWaiting */
        if
        :: ac_r != ACQUIRED ->
            /* released as the wait ended: look once more */
            TryAcquire(ac_ok, ac_t, ac_s, ac_n, ac_w);
            if
            :: ac_ok -> ac_r = ACQUIRED
            :: else
            fi
        :: else
        fi
    fi
}

/* Release(n) */
inline Release(rl_n, rl_w, rl_ok, rl_t, rl_s)
{
    released = released + rl_n;         /* released_.fetch_add(n, seq_cst) */
    rl_w = waiting;                     /* waiting_.load(seq_cst) */
    if
    :: rl_w > 0 -> Grant(rl_n, rl_w, rl_ok, rl_t, rl_s)
    :: else
    fi
}

proctype Acquirer(byte k; bool timedRounds)
{
    byte r, ok, t, s, n, w;
    bool timed;
    do
    :: k > 0 ->
        if
        :: timedRounds -> timed = true
        :: timedRounds -> timed = false
        :: else -> timed = false
        fi;
        Acquire(timed, r, ok, t, s, n, w);
        if
        :: r == ACQUIRED -> atomic { got++; k-- }
        :: r == TIMEDOUT                /* try again */
#ifdef CLOSE
        :: r == CLOSED -> break
#endif
        fi
    :: else -> break
    od;
    done++
}

proctype Releaser(byte n)
{
    byte w, ok, t, s;
    Release(n, w, ok, t, s);
    done++
}

#ifdef CLOSE
proctype Closer()
{
    closed = true;
    done++
}
#endif

init
{
    atomic {
        run Acquirer(KA, true);
        run Acquirer(KB, false);
        run Releaser(N1);
#if N2 > 0
        run Releaser(N2);
#endif
#ifdef CLOSE
        run Closer();
#endif
    }
    /* two acquirers, one or two releasers, the closer */
#ifdef CLOSE
    (done == 4 + (N2 > 0));
#else
    (done == 3 + (N2 > 0));
#endif
    /* conservation */
    assert(TOTAL == got + (released - taken) + parked);
    assert(waiting == 0);
#ifndef CLOSE
    assert(got == KA + KB)
#endif
}
