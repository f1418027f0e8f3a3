/*
 * event_s.pml -- the one-word single-waiter event (AutoResetEvent_s): state and waiter share
 * one atomic word, EMPTY, SIGNALED or the suspended waiter's handle.
 *
 * A waiter task waits ROUNDS times; a setter thread sets once per round, as soon as the waiter
 * has started that round's Wait (so each Set races the fast path, the suspension and the
 * publication). After its last Wait returns, the waiter destroys the event. Proves:
 *   - every handle reaches ResumeTask exactly once;
 *   - no lost wake-up: every Wait returns (else invalid end state);
 *   - lifetime: neither Set nor OnSuspended touches the word once the waiter's last Wait has
 *     returned, so the event may be destroyed right after Wait returns.
 *
 * Variants (spin -D...):
 *   BROKEN       OnSuspended stores its handle without the compare-exchange, i.e. without
 *                re-checking for a Set that came after Wait's fast path: a lost wake-up.
 *   BROKEN_LATE  Set resumes the waiter before it clears the word: the woken waiter may
 *                return and destroy the event while Set still writes to it.
 */

#define ROUNDS   3
#define EMPTY    0
#define SIGNALED 1
#define FIRSTH   2      /* handles are FIRSTH, FIRSTH+1, ...: a waiter in the word */
#define MAXH     8

byte state = EMPTY;     /* AutoResetEvent_s::state_ (one std::atomic word) */
bool destroyed;         /* the event's storage is gone */
byte started;           /* rounds the waiter has begun (test harness, not the event) */

byte nextHandle = FIRSTH;
byte resumed[MAXH];     /* how many times ResumeTask got each handle */

inline ResumeTask(rt_h)
{
    d_step {
        assert(rt_h >= FIRSTH && rt_h < nextHandle); assert(resumed[rt_h] == 0); resumed[rt_h]++
    }
}

/* state_.compare_exchange_strong(expected, desired): one atomic step on the live object. */
inline CAS(c_expected, c_desired, c_ok)
{
    d_step {
        assert(!destroyed);
        if
        :: state == c_expected -> state = c_desired; c_ok = true
        :: else -> c_ok = false
        fi
    }
}

/* OnSuspended(task), on the scheduler thread once the waiter is off the processor. */
proctype OnSuspended(byte h)
{
    bool ok;
#ifndef BROKEN
    /* OnSuspended 1: CAS EMPTY -> task: publishes and checks in one step */
    CAS(EMPTY, h, ok);
    if
    :: ok    /* published; a Set resumes it. The CAS was the last access. */
    :: else ->
        /* the word was SIGNALED (single waiter: nothing else can be there) */
        /* OnSuspended 2: CAS SIGNALED -> EMPTY, consuming the signal */
        CAS(SIGNALED, EMPTY, ok);
        assert(ok);
        /* OnSuspended 3: TC::ResumeTask(task) -- no access to the event after the CAS */
        ResumeTask(h)
    fi
#else
    d_step { assert(!destroyed); state = h }    /* broken: overwrites a SIGNALED */
#endif
}

/* Wait(): task only, one waiter at a time. */
inline Wait(w_h, w_ok)
{
    /* Wait 1: fast path, a load and, if SIGNALED, CAS SIGNALED -> EMPTY */
    d_step { assert(!destroyed); w_ok = (state == SIGNALED) };
    if
    :: w_ok -> CAS(SIGNALED, EMPTY, w_ok)
    :: else
    fi;
    if
    :: w_ok
    :: else ->
        /* Wait 2: TC::SuspendTask(this): off the processor, then OnSuspended(handle) */
        d_step { w_h = nextHandle; nextHandle++; assert(nextHandle <= MAXH) };
        run OnSuspended(w_h);
        (resumed[w_h] > 0)  /* returns once ResumeTask(handle) */
    fi
}

/* Set(): any thread. */
inline Set(s_s, s_ok)
{
    do
    /* Set 1: load the word */
    :: d_step { assert(!destroyed); s_s = state };
        if
        :: s_s == SIGNALED || s_s == EMPTY ->
            /* Set 2: CAS EMPTY -> SIGNALED, or SIGNALED -> SIGNALED (an already set event is
               written again: the RMW that hands this Set's data to the consuming waiter, which
               only a weak memory model tells apart from no write); on failure reload, retry */
            CAS(s_s, SIGNALED, s_ok);
            if
            :: s_ok -> break
            :: else
            fi
        :: s_s >= FIRSTH ->
#ifndef BROKEN_LATE
            /* Set 3: CAS waiter -> EMPTY: claims the handle; the last access to the event */
            CAS(s_s, EMPTY, s_ok);
            if
            /* Set 4: TC::ResumeTask(waiter) */
            :: s_ok -> ResumeTask(s_s); break
            :: else
            fi
#else
            ResumeTask(s_s);            /* broken: resume first ...        */
            CAS(s_s, EMPTY, s_ok);      /* ... then clear the word         */
            break
#endif
        fi
    od
}

proctype Waiter()
{
    byte h;
    bool ok;
    do
    :: started < ROUNDS -> started++; Wait(h, ok)
    :: else -> break
    od;
    destroyed = true    /* the owner destroys the event right after its last Wait returns */
}

proctype Setter()
{
    byte k = 1, s;
    bool ok;
    do
    :: k <= ROUNDS -> (started >= k); Set(s, ok); k++
    :: else -> break
    od
}

init
{
    byte h = FIRSTH;
    atomic { run Waiter(); run Setter() };
    (_nr_pr == 1);      /* everyone finished, OnSuspended calls included */
    do
    :: h < nextHandle -> assert(resumed[h] == 1); h++
    :: else -> break
    od
}
