/*
 * event.pml -- the multi-waiter AutoResetEvent: a signal flag beside SuspendableBase<Multiple>'s
 * waiters (a lock-free stack, and a slot of its own for the task that constructed the event),
 * with Waitable's Wait and re-check (sync/include/TC/Synchronization/AutoResetEvent.h,
 * SuspendableBase.h, Waitable.h).
 *
 * Two waiter tasks, the creator C and another task W, wait ROUNDS times each; a setter thread
 * sets while fewer than three of its Sets have not yet been matched by a returning wait (Sets do
 * not accumulate, so two that overlap may let one waiter pass; the window lets the setter make up
 * for that without setting for ever). The Sets race every step of the waits, the re-checks and
 * the re-checks' own hand-offs, whose put-back Set then races the setter's. Proves, under
 * sequential consistency (SuspendableBase.h argues the orders the C++ code relies on; spin checks
 * the algorithm, not the memory model):
 *   - every handle reaches ResumeTask exactly once;
 *   - no Set lets two waiters pass (passes never exceed Sets);
 *   - no lost wake-up: every Wait returns (else invalid end state: a waiter still suspended with
 *     the setter's window full);
 *   - the creator is resumed only from its own slot, never off the stack.
 *
 * Variants (spin -D...):
 *   BROKEN_NOCHECK  Set stores the signal and returns without looking for a suspended waiter:
 *                   a waiter that published and re-checked before the Set is never resumed.
 *   BROKEN_NOCLAIM  Set resumes a waiter without taking the signal back first (no exchange):
 *                   one Set lets two waiters pass.
 */

#define ROUNDS  2
#define TOTAL   4       /* 2 waiters x ROUNDS: the number of Sets */
#define FIRSTH  1       /* handles, one per wait that suspends: FIRSTH, FIRSTH+1, ... */
#define MAXH    8
#define DEPTH   2

bool signaled;          /* AutoResetEvent::signaled_ */
byte stack[DEPTH];      /* SuspendableBase<Multiple>::waiters_ (ConcurrentStack, LIFO) */
byte depth;
byte creatorSlot;       /* SuspendableBase<Multiple>::creatorWaiter_ (0: empty) */
byte publishing;        /* SuspendableBase<Multiple>::publishing_ (BusyCount) */

byte nextHandle = FIRSTH;
byte resumed[MAXH];     /* how many times ResumeTask got each handle */
bool ofCreator[MAXH];   /* the handle is a wait of the creator's (published in its slot) */
byte sets;              /* Sets issued by the setters (harness) */
byte passes;            /* waits that returned (harness) */

inline ResumeTask(rt_h)
{
    d_step { assert(resumed[rt_h] == 0); resumed[rt_h]++ }
}

/* ConcurrentStack::Pop, then TakeCreatorWaiter: the newest waiter, the creator only when the
 * stack was empty. rn_ok: somebody was resumed. */
inline ResumeNext(rn_h, rn_ok)
{
    /* ResumeNext 1: waiters_.Pop() */
    d_step {
        if
        :: depth > 0 -> depth--; rn_h = stack[depth]; stack[depth] = 0
        :: else -> rn_h = 0
        fi
    };
    if
    :: rn_h != 0 -> assert(!ofCreator[rn_h]); ResumeTask(rn_h); rn_ok = true
    :: else ->
        /* ResumeNext 2: TakeCreatorWaiter(): a load, then exchange(nullptr) if it was taken */
        if
        :: creatorSlot == 0 -> rn_ok = false
        :: else ->
            d_step { rn_h = creatorSlot; creatorSlot = 0 };
            if
            :: rn_h != 0 -> ResumeTask(rn_h); rn_ok = true
            :: else -> rn_ok = false
            fi
        fi
    fi
}

/* AutoResetEvent::Set(). */
inline Set(s_h, s_ok, s_was)
{
    /* Set 0: MayHaveWaiter() && ResumeNextUnordered(): a waiter already suspended takes the
     * signal directly; the peek (stack head, then creator slot) is only a hint */
    s_ok = false;
    if
    :: depth != 0 || creatorSlot != 0 -> ResumeNext(s_h, s_ok)
    :: else
    fi;
    if
    :: s_ok -> goto setDone
    :: else
    fi;
    do
    :: /* Set 1: signaled_.store(true) */
       signaled = true;
#ifndef BROKEN_NOCHECK
       /* Set 2: IsSuspendedAfterSeqCstChange(): the stack's head, then the creator's slot */
       if
       :: depth != 0
       :: else ->
           if
           :: creatorSlot == 0 -> break
           :: else
           fi
       fi;
#ifndef BROKEN_NOCLAIM
       /* Set 3: signaled_.exchange(false): somebody else took the signal and resumes someone */
       d_step { s_was = signaled; signaled = false };
       if
       :: !s_was -> break
       :: else
       fi;
#endif
       /* Set 4: ResumeNext(); none left: put the signal back (loop) */
       ResumeNext(s_h, s_ok);
       if
       :: s_ok -> break
       :: else
       fi
#else
       break
#endif
    od;
setDone: skip
}

/* The waiter's publication (OnSuspended for the stack, CreatorCallback for the creator), then
 * Waitable::OnPublished: Recheck() and, if it took the signal, AutoResetEvent::Resume(). Runs on
 * the thread the waiter left, so it is a process of its own. */
proctype Publish(byte h)
{
    byte rh, was;
    bool ok, took;
    publishing++;               /* BusyCount::Scope: one RMW before the publication */
    if
    :: ofCreator[h] -> d_step { assert(creatorSlot == 0); creatorSlot = h }
    :: else -> d_step { assert(depth < DEPTH); stack[depth] = h; depth++ }
    fi;
    /* Recheck: signaled_.load() && signaled_.exchange(false) */
    if
    :: signaled -> d_step { took = signaled; signaled = false }
    :: else -> took = false
    fi;
    if
    :: took ->
        /* Resume(): if (!ResumeNext()) Set(); */
        ResumeNext(rh, ok);
        if
        :: ok
        :: else -> Set(rh, ok, was)
        fi
    :: else
    fi;
    publishing--                /* the scope's end: the last access */
}

/* Waitable::Wait() by the creator (w_creator) or the other task. */
inline Wait(w_creator, w_h, w_was)
{
    /* Wait 1: TryWait(): signaled_.exchange(false) */
    d_step { w_was = signaled; signaled = false };
    if
    :: w_was
    :: else ->
        /* Wait 2: Suspend(): off the processor, then the publication on the thread it left */
        d_step { w_h = nextHandle; ofCreator[w_h] = w_creator; nextHandle++; assert(nextHandle <= MAXH) };
        run Publish(w_h);
        (resumed[w_h] > 0)      /* returns once ResumeTask(handle) */
    fi;
    /* AfterWait: WaitOutPublishers() -- no re-check of this object still running */
    (publishing == 0);
    d_step { passes++; assert(passes <= sets) }
}

proctype Waiter(bool creator)
{
    byte h, k = 0;
    bool was;
    do
    :: k < ROUNDS -> Wait(creator, h, was); k++
    :: else -> break
    od
}

proctype Setter()
{
    byte h;
    bool ok, was;
    do
    :: atomic { passes < TOTAL && sets < passes + 3 -> sets++ }; Set(h, ok, was)
    :: passes == TOTAL -> break
    od
}

init
{
    byte h = FIRSTH;
    atomic { run Waiter(true); run Waiter(false); run Setter() };
    (_nr_pr == 1);              /* everyone finished, publications included */
    assert(passes == TOTAL && depth == 0 && creatorSlot == 0);
    do
    :: h < nextHandle -> assert(resumed[h] == 1); h++
    :: else -> break
    od
}
