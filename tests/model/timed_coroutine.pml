/*
 * timed_coroutine.pml -- a parked coroutine's timed wait (co_await TakeAsync(timeout) on the
 * guide's Mailbox, with an executor), whose executor may drop the frame -- and the timer node in
 * it -- instead of resuming it (kernel/src/Timers.h: "A parked coroutine ...").
 *
 * One wait; a producer puts one value at any moment; the deadline is "short" (may pass once the
 * node is in the heap) or "long" (never passes); the executor, when handed the coroutine, either
 * drops the frame at once or runs it (await_resume settles the timer, then the frame ends).
 *
 * Protocol (kernel/src/Suspend.cpp, Timers.cpp):
 *   await_suspend: PrepareTimer (Arming); OnSuspended (publish, re-check, maybe ResumeTask);
 *     ArmTimer: CAS loop clearing Arming and, unless Resumed, inserting the node (Armed); if a
 *     resume came first it submits the coroutine -- its last act.
 *   ResumeTask -> ReleaseForResume: before = fetch_or(Resumed); Arming -> leave it to ArmTimer;
 *     Done -> submit; Firing -> leave it to the timer thread; Armed -> under the lock, if still
 *     Armed remove it and mark Done, then submit; else (the timer thread took it) wait for Done
 *     and submit.
 *   Timer thread: under the lock, remove the node, Armed -> Firing; then: Resumed -> |= Done;
 *     else OnTimeout: false -> before = fetch_or(Done), submit if before had Resumed; true ->
 *     timedOut, |= Done, submit.
 * Proves: the coroutine is submitted exactly once; nobody touches the node after the submit
 * (the frame may be gone); no lost wake-up (the run always ends with the coroutine submitted).
 *
 * Variants (spin -D...):
 *   BROKEN_SUBMIT_ARMED  the old code: ResumeTask only marks Resumed and submits at once, the
 *                        node left in the heap: the timer thread touches a dropped frame.
 *   BROKEN_NO_HANDOFF    the timer thread never submits for a resumer that found it firing:
 *                        the coroutine is never submitted (a lost wake-up).
 */

#define ARMING  1
#define ARMED   2
#define RESUMED 4
#define FIRING  8
#define DONE    16

#define H 1                 /* the one waiter's handle */

byte value;                 /* Mailbox::value_ */
byte waiter;                /* Mailbox::waiter_ */
byte nstate;                /* TimerNode::state */
bool inHeap;
bool longWait;              /* the deadline never passes */
bool timedOut;
bool freed;                 /* the frame (node, entry) is gone */
byte submitted;             /* hand-overs to the executor */
bool tlock;

inline Lock()   { atomic { !tlock -> tlock = true } }
inline Unlock() { tlock = false }

inline FetchOr(fo_bits, fo_before)
{
    d_step { assert(!freed); fo_before = nstate; nstate = nstate | fo_bits }
}

/* Executor::Submit(work): drop the frame at once, or run the coroutine (Settle, then end). */
inline Submit()
{
    d_step { assert(submitted == 0); submitted++ };
    run Coroutine()
}

proctype Coroutine()
{
    byte s;
    if
    :: true -> freed = true     /* a closed strand drops it: ParkedWork::Abandon */
    :: true ->
        /* await_resume -> SettleTimer: the node must be quiet by now */
        d_step { assert(!freed); s = nstate };
        assert((s & DONE) != 0 || ((s & ARMED) == 0 && (s & FIRING) == 0 && (s & ARMING) == 0));
        freed = true    /* the frame ends */
    fi
}

/* ResumeTask(H) for a parked coroutine with a timer: ReleaseForResume, maybe Submit. */
inline ResumeTask()
{
#ifndef BROKEN_SUBMIT_ARMED
    FetchOr(RESUMED, rb);
    if
    :: (rb & ARMING) != 0 -> skip                   /* ArmTimer's caller submits */
    :: (rb & ARMING) == 0 && (rb & DONE) != 0 -> Submit()
    :: (rb & ARMING) == 0 && (rb & DONE) == 0 && (rb & FIRING) != 0 -> skip /* the timer submits */
    :: (rb & ARMING) == 0 && (rb & DONE) == 0 && (rb & FIRING) == 0 ->
        Lock();
        d_step { assert(!freed); rs = nstate };
        if
        :: (rs & ARMED) != 0 ->
            d_step { inHeap = false; nstate = (rs & ~ARMED) | DONE };
            Unlock();
            Submit()
        :: else ->
            Unlock();
            atomic { (nstate & DONE) != 0 -> assert(!freed) }  /* spin until Done */
            Submit()
        fi
    fi
#else
    FetchOr(RESUMED, rb);
    Submit()
#endif
}

proctype Producer()
{
    byte w, rb, rs;
    value = 1;
    d_step { w = waiter; waiter = 0 };
    if
    :: w != 0 -> ResumeTask()
    :: else
    fi
}

/* await_suspend of co_await TakeAsync(timeout) that found value_ empty */
proctype Suspender()
{
    byte w, s, desired, rb, rs;
    bool ok, resumedFirst;
    nstate = ARMING;                /* PrepareTimer */
    /* OnSuspended: publish, re-check, claim */
    waiter = H;
    if
    :: value != 0 ->
        d_step { w = waiter; waiter = 0 };
        if
        :: w != 0 ->
            /* ResumeTask here, inside OnSuspended, always finds the node arming: it marks it
               and leaves the hand-over to ArmTimer below */
            FetchOr(RESUMED, rb);
#ifndef BROKEN_SUBMIT_ARMED
            assert((rb & ARMING) != 0)
#else
            Submit()
#endif
        :: else
        fi
    :: else
    fi;
    /* ArmTimer */
    Lock();
    d_step { assert(!freed); s = nstate };
    do
    :: true ->
        if
        :: (s & RESUMED) == 0 -> inHeap = true; desired = (s & ~ARMING) | ARMED
        :: else -> desired = (s & ~ARMING) | DONE
        fi;
        d_step {
            assert(!freed);
            if
            :: nstate == s -> nstate = desired; ok = true
            :: else -> s = nstate; ok = false
            fi
        };
        if
        :: ok -> break
        :: else -> inHeap = false
        fi
    od;
    resumedFirst = (s & RESUMED) != 0;
    Unlock();
    if
    :: resumedFirst -> Submit()    /* a resume during OnSuspended left it to us */
    :: else
    fi
}

proctype Timer()
{
    byte s, before;
    bool ok;
end: atomic { !tlock && inHeap && !longWait -> tlock = true };
    d_step { assert(!freed); inHeap = false; s = nstate; nstate = (s & ~ARMED) | FIRING };
    Unlock();
    if
    :: (s & RESUMED) != 0 -> FetchOr(DONE, before)
    :: else ->
        d_step {
            assert(!freed);
            if
            :: waiter == H -> waiter = 0; ok = true
            :: else -> ok = false
            fi
        };
        if
        :: !ok ->
            FetchOr(DONE, before);
#ifndef BROKEN_NO_HANDOFF
            if
            :: (before & RESUMED) != 0 -> Submit()
            :: else
            fi
#endif
        :: else ->
            d_step { assert(!freed); timedOut = true };
            FetchOr(DONE, before);
            Submit()
        fi
    fi
}

init
{
    if
    :: longWait = true
    :: longWait = false
    fi;
    atomic { run Suspender(); run Producer(); run Timer() };
    /* blocks (an invalid end state) unless the coroutine is handed over and its frame ends;
       the other processes' assertions check every later access to the node */
    (submitted == 1 && freed)
}
