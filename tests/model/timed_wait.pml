/*
 * timed_wait.pml -- SuspendTaskFor's timeout race, on the guide's Mailbox::Take(value, timeout)
 * (the custom-primitives guide's), with the kernel's timer node as kernel/src/Timers.cpp implements it.
 *
 * A waiter task takes NPUT values with Take(value, timeout), retrying after a timeout; a
 * producer thread puts them one at a time. Each wait's deadline is chosen by the model: "short"
 * (the timer may fire at any moment once the node is in the heap) for at most MAXSHORT waits,
 * or "long" (never passes in this run, so a missed Put shows up as a hang).
 *
 * Kernel protocol (kernel/src/Timers.h, Suspend.cpp, SchedulerRun.cpp RunPostSwitch):
 *   PrepareTimer, before the switch: node state = Arming.
 *   The scheduler thread: OnSuspended, then ArmTimer: under the timer lock, in a CAS loop,
 *   clear Arming and, unless a ResumeTask already set Resumed, put the node in the heap and set
 *   Armed. ArmTimer's CAS is its last access to the node.
 *   ResumeTask: state |= Resumed, then the waiter is made runnable.
 *   Timer thread, deadline passed: under the lock, take the node out of the heap, Armed ->
 *   Firing (remembering the state); outside the lock: if Resumed was set, |= Done; else
 *   OnTimeout: false -> |= Done (the resumer's ResumeTask ends the wait); true -> timedOut_ =
 *   true, |= Done, then Reschedule (the kernel's resume, its last access to the entry).
 *   SettleTimer, on the waiter once it runs: Done -> return; else under the lock wait while
 *   Arming (unlocking in between); Armed -> remove from the heap, clear Armed, return; Firing ->
 *   wait for Done. Then SuspendTaskFor returns !timedOut_ and the node's storage goes away.
 * Proves:
 *   - every handle is resumed exactly once (by a Put, the re-check or the timer);
 *   - SuspendTaskFor returns true iff a ResumeTask (not the timer) resumed it;
 *   - no access to the node or entry, and no OnTimeout, after SuspendTaskFor returned;
 *   - no lost wake-up: every value is taken, the run ends (else invalid end state).
 *
 * Variants (spin -D...):
 *   BROKEN          OnSuspended does not re-check value_: a lost wake-up under a long deadline.
 *   BROKEN_NOWAIT   SettleTimer does not wait for Done while the timer thread is firing.
 *   BROKEN_NOARMING SettleTimer does not wait while ArmTimer is still to run.
 */

#define NPUT     2      /* values put and taken */
#define MAXSHORT 2      /* waits with a deadline that may pass */
#define MAXH     10     /* bound on handles (asserted) */

/* TimerNode::state bits (kernel/src/Timers.h) */
#define ARMING  1
#define ARMED   2
#define RESUMED 4
#define FIRING  8
#define DONE    16

/* who resumed a handle */
#define BY_RESUMER 1    /* TC::ResumeTask from Put or the re-check */
#define BY_TIMER   2    /* the timer thread's Reschedule, after OnTimeout returned true */

byte value;             /* Mailbox::value_  (0 = empty) */
byte waiter;            /* Mailbox::waiter_ (0 = nullptr) */

byte nextHandle = 1;
byte resumed[MAXH];     /* resumptions per handle */
byte resumer[MAXH];     /* BY_RESUMER or BY_TIMER */
bool longWait[MAXH];    /* this wait's deadline never passes */
/* the timer node and entry fields, on the waiter's stack or frame */
byte nstate[MAXH];      /* TimerNode::state */
bool inHeap[MAXH];      /* linked into the timer's heap (guarded by the timer lock) */
bool timedOut[MAXH];    /* SuspendedTaskEntry::timedOut_ */
bool freed[MAXH];       /* SuspendTaskFor returned: node and entry are gone */

bool tlock;             /* TimerService::lock_ */
byte taken;             /* values the waiter has taken */

inline Lock()   { atomic { !tlock -> tlock = true } }
inline Unlock() { tlock = false }

/* node.state.fetch_or(bits) on a live node */
inline FetchOr(fo_h, fo_bits)
{
    d_step { assert(!freed[fo_h]); nstate[fo_h] = nstate[fo_h] | fo_bits }
}

inline MakeRunnable(mr_h, mr_by)
{
    d_step {
        assert(mr_h > 0 && mr_h < nextHandle); assert(resumed[mr_h] == 0);
        resumed[mr_h]++; resumer[mr_h] = mr_by
    }
}

/* TC::ResumeTask(task): NoteTimerResume, then Reschedule */
inline ResumeTask(rt_h)
{
    FetchOr(rt_h, RESUMED);
    MakeRunnable(rt_h, BY_RESUMER)
}

/* The scheduler thread after the switch (RunPostSwitch, SuspendTimed): OnSuspended, ArmTimer. */
proctype PostSwitch(byte h)
{
    byte w, s, desired;
    bool ok;
    /* OnSuspended 1: waiter_.store(task, seq_cst) */
    waiter = h;
#ifndef BROKEN
    if
    /* OnSuspended 2: value_.load(seq_cst) != 0 -- re-check */
    :: value != 0 ->
        /* OnSuspended 3: waiter_.exchange(nullptr) -- claim; 4: ResumeTask */
        d_step { w = waiter; waiter = 0 };
        if
        :: w != 0 -> ResumeTask(w)
        :: else
        fi
    :: else
    fi;
#endif
    /* ArmTimer -> TimerService::Arm */
    Lock();
    d_step { assert(!freed[h]); s = nstate[h] };
    do
    :: true ->
        if
        :: (s & RESUMED) == 0 -> inHeap[h] = true; desired = (s & ~ARMING) | ARMED
        :: else -> desired = s & ~ARMING
        fi;
        /* compare_exchange_strong(state, desired): a ResumeTask may set Resumed meanwhile */
        d_step {
            assert(!freed[h]);
            if
            :: nstate[h] == s -> nstate[h] = desired; ok = true
            :: else -> s = nstate[h]; ok = false
            fi
        };
        if
        :: ok -> break      /* the last access to the node */
        :: else -> inHeap[h] = false    /* Remove(node) if it was inserted; decide again */
        fi
    od;
    Unlock()
}

/* The timer thread's handling of one node. (One process per node: an over-approximation of
 * the single timer thread, which fires nodes one after the other.) */
proctype Timer(byte h)
{
    byte s;
    bool ok;
    /* Run: the root's deadline passed; Remove(node); CAS loop Armed -> Firing */
end: atomic { !tlock && inHeap[h] && !longWait[h] -> tlock = true };
    d_step {
        assert(!freed[h]);
        inHeap[h] = false;
        s = nstate[h];
        nstate[h] = (s & ~ARMED) | FIRING
    };
    Unlock();
    /* Fire(node, state) */
    if
    :: (s & RESUMED) != 0 -> FetchOr(h, DONE)
    :: else ->
        /* OnTimeout(task): waiter_.compare_exchange_strong(task, nullptr) */
        d_step {
            assert(!freed[h]);  /* the callback is not called once the wait has returned */
            if
            :: waiter == h -> waiter = 0; ok = true
            :: else -> ok = false
            fi
        };
        if
        :: !ok -> FetchOr(h, DONE)  /* a resumer has the handle; its ResumeTask ends the wait */
        :: else ->
            d_step { assert(!freed[h]); timedOut[h] = true };
            FetchOr(h, DONE);
            assert(!freed[h]);
            MakeRunnable(h, BY_TIMER)   /* Reschedule(entry): the last access to the entry */
        fi
    fi
}

/* SettleTimer(entry, node) -> TimerService::Settle, then return !timedOut_ */
inline SettleTimer(st_h, st_s, st_result)
{
    st_s = nstate[st_h];
    if
    :: (st_s & DONE) != 0
    :: else ->
        Lock();
#ifndef BROKEN_NOARMING
        do
        :: (nstate[st_h] & ARMING) != 0 -> Unlock(); Lock()    /* ArmTimer still to come */
        :: else -> break
        od;
#endif
        st_s = nstate[st_h];
        if
        :: (st_s & ARMED) != 0 ->
            inHeap[st_h] = false;                               /* Remove(node) */
            nstate[st_h] = nstate[st_h] & ~ARMED;
            Unlock()
        :: else ->
            Unlock();
#ifndef BROKEN_NOWAIT
            if
            :: (st_s & FIRING) != 0 -> ((nstate[st_h] & DONE) != 0)  /* spin until Done */
            :: else
            fi
#endif
        fi
    fi;
    st_result = !timedOut[st_h];
    assert(st_result == (resumer[st_h] == BY_RESUMER));
    freed[st_h] = true      /* SuspendTaskFor returns: the node goes with the stack frame */
}

/* SuspendTaskFor(this, timeout): returns true iff a ResumeTask ended the wait. */
inline SuspendTaskFor(sf_h, sf_shorts, sf_s, sf_result)
{
    d_step { sf_h = nextHandle; nextHandle++; assert(nextHandle <= MAXH) };
    if
    :: sf_shorts < MAXSHORT -> sf_shorts++      /* a deadline that may pass */
    :: true -> longWait[sf_h] = true            /* one that does not, in this run */
    fi;
    nstate[sf_h] = ARMING;      /* PrepareTimer */
    run Timer(sf_h);
    run PostSwitch(sf_h);       /* SwitchAway: off the processor; OnSuspended, ArmTimer */
    (resumed[sf_h] > 0);        /* blocked until made runnable */
    SettleTimer(sf_h, sf_s, sf_result)
}

/* Mailbox::Put(value), any thread. */
inline Put(p_v, p_w)
{
    value = p_v;                                /* Put 1: value_.store(seq_cst) */
    d_step { p_w = waiter; waiter = 0 };        /* Put 2: waiter_.exchange(nullptr) */
    if
    :: p_w != 0 -> ResumeTask(p_w)              /* Put 3: ResumeTask(waiter) */
    :: else
    fi
}

proctype Waiter()
{
    byte v, h, s, shorts;
    bool result;
    do
    :: taken == NPUT -> break
    :: else ->
        /* Mailbox::Take(value, timeout) */
        do
        /* Take 1: value_.exchange(0) */
        :: d_step { v = value; value = 0 };
            if
            :: v != 0 -> result = true; break
            :: else ->
                /* Take 2: if (!SuspendTaskFor(this, timeout)) return false; */
                SuspendTaskFor(h, shorts, s, result);
                if
                :: !result -> break
                :: else
                fi
            fi
        od;
        if
        :: result -> assert(v == taken + 1); taken++
        :: else     /* timed out; try again */
        fi
    od
}

proctype Producer()
{
    byte k = 1, w;
    do
    :: k <= NPUT -> (taken == k - 1); Put(k, w); k++
    :: else -> break
    od
}

init
{
    byte h = 1;
    atomic { run Waiter(); run Producer() };
    (taken == NPUT);
    /* every handle handed out was resumed exactly once */
    do
    :: h < nextHandle -> assert(resumed[h] == 1); h++
    :: else -> break
    od;
    assert(value == 0)
}
