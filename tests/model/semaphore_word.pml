/*
 * semaphore_word.pml -- the one-word SemaphoreCore under Semaphore and Channel
 * (sync/include/TC/Synchronization/detail/SemaphoreCore.h, sync/src/SemaphoreCore.cpp): the
 * permit count (bits 2 and up), the waiter flag W (bit 0: the list holds a waiter; changed only
 * under the lock) and the list's lock Q (bit 1) in one atomic word, and a FIFO of WaitNodes in
 * the waiters' frames, touched only under Q.
 *
 * Two acquirers, A taking KA permits (each round a timed or an untimed Acquire; its timer may
 * fire at any moment after the publication, at most MAXFIRE times in a run; a timed-out round
 * is tried again) and B taking KB (untimed), race two releasers, Release(N1) and Release(N2)
 * (N2 = 0: only the first), on a semaphore made with INIT permits, INIT + N1 + N2 == KA + KB.
 * Defaults: one permit each, Release(1) twice, one firing. With CLOSE a closer runs Close at
 * any moment and an acquirer stops at its first Closed (there may be fewer permits than
 * acquires). The last acquirer back destroys the semaphore as soon as the contract allows
 * (below). Proves, under sequential consistency:
 *   - every handle is resumed exactly once: by the Release that popped it (the hand-off), by
 *     its own OnSuspended (a permit arrived, or closed), by the kernel after OnTimeout found it
 *     queued, or by Close; never by two of them. A waiter resumed other than by its timer finds
 *     its result in status (Acquired from a Release, Closed from Close), a timed-out one none;
 *   - no lost wake-up, no spin that never ends: every process finishes (else invalid end state;
 *     a spin on Q is a wait for Q to clear, so a lock never released is a deadlock): no waiter
 *     sleeps while a permit sits in the count with nobody to hand it over;
 *   - conservation: INIT + N1 + N2 == Acquires that returned Acquired + the count at the end
 *     (permits are neither created nor lost: each is taken once, by TryAcquire's CAS, by
 *     OnSuspended's CAS or by a Release's hand-off, or is still in the count);
 *   - the invariants the code relies on, asserted at every change of the word: W set -> count
 *     0 (stronger than "W set and Q free -> count 0": also while Q is held), and, with Q free,
 *     W set <-> the list is not empty; ReleaseToWaiters, having locked a word with W, finds the
 *     list non-empty and the count zero;
 *   - the list is touched only by the holder of Q (a ghost `holder` checks it), and a node only
 *     while its waiter is inside its Acquire (ResumeChain reads `next` before the resume);
 *   - lifetime: no Release, OnSuspended, OnTimeout or Close touches the word or the list once
 *     the last acquirer's Acquire has returned and the contract allows the destruction: every
 *     acquirer has returned and every permit released was taken (the harness's knowledge; a
 *     program has it from its own count), so every Release has made the RMW that made its
 *     permits available, which must be its last access. With CLOSE, where acquirers may stop
 *     early: the releasers returned unless every permit was taken, and the closer returned
 *     unless it resumed a waiter (a resume that comes after its last access).
 * FIFO among queued waiters holds by construction here (the list is an array popped from the
 * front; a waiter whose CAS failed removes the node it just pushed) and is not checked apart.
 *
 * Kernel abstraction (as in mailbox_word.pml; the timer-node protocol is proved in
 * timed_wait.pml): a handle is a number; SuspendTask(For) spawns OnSuspended as a process of its
 * own, followed by the kernel's ArmTimer; the timer fires only once armed and only if no
 * ResumeTask came first, and the wait returns after the resume and, if the timer started firing,
 * after it finished (SettleTimer). Each load or RMW of the word is one atomic step; the list
 * operations, touched only under Q, are folded into the neighbouring step of the holder (the
 * list is nobody else's to look at), as is ResumeChain's read of next with the resume.
 * compare_exchange_weak never fails spuriously here (a spurious failure is a retry with the same
 * word). A spin on Q is one step that waits for Q to clear and reloads. Semaphore::Acquire's
 * TryAcquire before SemaphoreCore::Acquire is left out (a failed TryAcquire changes nothing, a
 * successful one is Ready's). Acquire(timeout) with no time left is not modelled.
 *
 * Variants (spin -D...):
 *   CLOSE                 (passes) a closer runs Close at any moment.
 *   NOINV                 the invariants are not asserted, so that a broken variant runs on to
 *                         its consequence (a lost wake-up) instead of failing at the invariant.
 *   BROKEN_LATE_PUBLISH   ReleaseToWaiters resumes the served waiters before its last
 *                         fetch_add: a served waiter returns and destroys the semaphore first.
 *   BROKEN_NOFLAG_CHECK   Release adds its permits with its CAS without looking at W: W is set
 *                         with a count; with NOINV, a queued waiter sleeps beside the permit.
 *   BROKEN_SPLIT_UNLOCK   a waiter that found no permit releases Q with one RMW and sets W with
 *                         a second: the list is not empty with Q free and W clear; with NOINV,
 *                         a Release in between adds to the count and the waiter sleeps.
 *   BROKEN_STALE          a waiter decides "no permit" from a load taken before it locked, and
 *                         publishes with an RMW that does not compare (sets W, clears Q): a
 *                         Release between that load and the lock is missed (W set with a count;
 *                         with NOINV, a lost wake-up).
 *   BROKEN_CHAIN          ResumeChain reads a node's next after resuming it: the resumed waiter
 *                         has returned and its node is gone (needs a chain of two: N1=2 N2=0).
 *   BROKEN_OLD            the previous design (HEAD before the one-word core): count_, waiters_
 *                         and a SpinLock; Release is count_.fetch_add(n), then waiters_.load()
 *                         and Wake() if it is non-zero. Without Semaphore's BusyCount drain the
 *                         acquirer that takes the permit returns and destroys the semaphore
 *                         while that Release still loads waiters_ -- why the drain existed, and
 *                         why the one-word design, with no access after the RMW, needs none.
 */

#ifndef INIT
#define INIT     0      /* the permits the semaphore is made with */
#endif
#ifndef N1
#define N1       1      /* releaser 1: Release(N1) */
#endif
#ifndef N2
#define N2       1      /* releaser 2: Release(N2); 0: no second releaser */
#endif
#ifndef KA
#define KA       1      /* acquirer A (a timed or an untimed Acquire, each round): KA permits */
#endif
#ifndef KB
#define KB       1      /* acquirer B (untimed): KB permits */
#endif
#ifndef MAXFIRE
#define MAXFIRE  1      /* timer firings in a run */
#endif

#if defined(BROKEN_OLD) && defined(CLOSE)
#error "BROKEN_OLD models no Close"
#endif

#define WF       1      /* kWaiters */
#define QL       2      /* kQueueLock */
#define PERMIT   4      /* kPermit: the count is word >> 2 */
#define TOTAL    (INIT + N1 + N2)
#if N2 > 0
#define NREL     2
#else
#define NREL     1
#endif
#define NACQ     2      /* acquirer processes */
#define MAXW     2      /* nodes on the list at once: one per acquirer */
/* handles 1, 2, ...: every wait ends with a permit, a timeout or (CLOSE) its taker's end */
#define MAXH     (1 + KA + KB + MAXFIRE)

/* status and results (AcquireResult) */
#define PENDING  0
#define ACQUIRED 1
#define CLOSED   2
#define TIMEDOUT 3

/* who resumed a handle */
#define BY_REL   1      /* a Release's hand-off (ResumeChain after its last RMW) */
#define BY_SELF  2      /* its own OnSuspended (a permit arrived, or closed) */
#define BY_TIMER 3      /* the kernel, after OnTimeout returned true */
#define BY_CLOSE 4      /* Close (ResumeChain after its unlock) */

byte st = INIT * PERMIT;    /* SemaphoreCore::state_ (one std::atomic<std::uint64_t>) */
bool closed;                /* SemaphoreCore::closed_ */
bool destroyed;             /* the semaphore's storage is gone */
byte holder;                /* ghost: _pid of the holder of Q (0: nobody) */
#ifdef BROKEN_OLD
bool lk;                    /* the old SpinLock lock_ */
byte waiters;               /* the old waiters_ */
#endif

/* SemaphoreCore::list_, a WaitList of nodes (by handle): lst[0] the oldest, nq of them */
byte lst[MAXW];
byte nq;
bool linked[MAXH];          /* WaitNode::linked */
byte nodeNext[MAXH];        /* WaitNode::next, as a chain taken off the list links it */
byte status[MAXH];          /* WaitNode::status */
bool gone[MAXH];            /* the node's frame is gone: its Acquire returned */

byte nextHandle = 1;
byte resumed[MAXH];         /* how many times each handle was resumed */
byte resumer[MAXH];         /* BY_REL, BY_SELF, BY_TIMER or BY_CLOSE */
bool armed[MAXH];           /* the kernel's ArmTimer ran (after OnSuspended returned) */
bool firing[MAXH];          /* the timer took the node and has not finished */
bool settled[MAXH];         /* SuspendTaskFor settled the timer: it will not fire any more */
byte fires;                 /* timer firings so far */

byte got;                   /* Acquires that returned Acquired */
byte acqDone;               /* acquirers that returned for good */
byte relDone;               /* releasers that returned */
bool closeDone;             /* the closer returned */
byte closeResumed;          /* waiters Close resumed */

/* The invariants of the word, at every change of it (not in the old design; not with NOINV,
   which lets a broken variant run on to its consequence). */
inline Inv()
{
#if !defined(BROKEN_OLD) && !defined(NOINV)
    assert((st & WF) == 0 || st / PERMIT == 0);
    assert((st & QL) != 0 || ((st & WF) != 0) == (nq > 0))
#else
    skip
#endif
}

/* TC::ResumeTask(handle), or the kernel's resume after a timeout: once per handle. Inside a
   d_step. */
inline Resume(r_h, r_by)
{
    assert(r_h >= 1 && r_h < nextHandle); assert(resumed[r_h] == 0);
    resumed[r_h]++; resumer[r_h] = r_by; closeResumed = closeResumed + (r_by == BY_CLOSE)
}

/* WaitList::PushBack(node), under the lock; inside a d_step. */
inline PushBack(pb_h)
{
    assert(holder == _pid); assert(nq < MAXW); assert(!gone[pb_h]);
    lst[nq] = pb_h; nq++; linked[pb_h] = true
}

/* WaitList::Remove(node), under the lock; inside a d_step. */
inline Remove(rm_h)
{
    assert(holder == _pid); assert(linked[rm_h]); assert(!gone[rm_h]);
    if
    :: lst[0] == rm_h -> lst[0] = lst[1]
    :: else -> assert(nq == 2 && lst[1] == rm_h)
    fi;
    lst[1] = 0; nq--; linked[rm_h] = false
}

/* WaitList::PopFront() appended to the served chain (*tail = node; tail = &node->next), under
   the lock; inside a d_step. po_hd the chain's head, po_tl its tail. */
inline PopServed(po_hd, po_tl, po_n)
{
    assert(holder == _pid); assert(nq > 0);
    po_n = lst[0]; assert(!gone[po_n] && linked[po_n]);
    lst[0] = lst[1]; lst[1] = 0; nq--; linked[po_n] = false;
    nodeNext[po_n] = 0;
    if
    :: po_hd == 0 -> po_hd = po_n
    :: else -> nodeNext[po_tl] = po_n
    fi;
    po_tl = po_n; po_n = 0
}

/*
 * ResumeChain(node, status), after the lock is released: for each node of the chain, read next,
 * leave the status, ResumeTask(task). rc_c walks the chain (0 at its end); rc_n is next.
 */
inline ResumeChain(rc_c, rc_n, rc_status, rc_by)
{
    do
    :: rc_c != 0 ->
#ifndef BROKEN_CHAIN
        /* ResumeChain: next = node->next; node->status = status; ResumeTask(node->task) --
           the node may be gone from here on */
        d_step {
            assert(!gone[rc_c]); rc_n = nodeNext[rc_c]; nodeNext[rc_c] = 0;
            status[rc_c] = rc_status; Resume(rc_c, rc_by); rc_c = rc_n; rc_n = 0
        }
#else
        d_step { assert(!gone[rc_c]); status[rc_c] = rc_status; Resume(rc_c, rc_by) };
        /* broken: next read after the resume */
        d_step { assert(!gone[rc_c]); rc_n = nodeNext[rc_c]; nodeNext[rc_c] = 0; rc_c = rc_n }
#endif
    :: else -> break
    od
}

/* SemaphoreCore::TryAcquire(): ta_ok the result. The same in the old design (its count_). */
inline TryAcquire(ta_s, ta_ok)
{
    /* TryAcquire 1: state_.load(relaxed) */
    d_step { assert(!destroyed); ta_s = st };
    do
    :: ta_s >= PERMIT ->
        /* TryAcquire 2: CAS(state -> state - kPermit, acquire); on failure reload */
        d_step {
            assert(!destroyed);
            if
            :: st == ta_s -> st = ta_s - PERMIT; ta_ok = true; ta_s = 0
            :: else -> ta_s = st; ta_ok = false
            fi;
            Inv()
        };
        if
        :: ta_ok -> break
        :: else
        fi
    :: ta_s < PERMIT -> ta_ok = false; ta_s = 0; break
    od
}

#ifndef BROKEN_OLD

/* LockQueue(): lq_s is the word as the taking CAS left it (Q set). */
inline LockQueue(lq_s, lq_ok)
{
    /* LockQueue 1: state_.load(relaxed) */
    d_step { assert(!destroyed); lq_s = st };
    do
    /* LockQueue 2: Q set: SpinPause and reload, until the holder unlocks */
    :: (lq_s & QL) != 0 -> d_step { (st & QL) == 0; assert(!destroyed); lq_s = st }
    :: (lq_s & QL) == 0 ->
        /* LockQueue 3: CAS(state -> state | Q, acquire); on failure reload */
        d_step {
            assert(!destroyed);
            if
            :: st == lq_s -> st = lq_s | QL; lq_s = st; holder = _pid; lq_ok = true
            :: else -> lq_s = st; lq_ok = false
            fi
        };
        if
        :: lq_ok -> lq_ok = false; break
        :: else
        fi
    od
}

/* UnlockQueue(): fetch_and(~(Q | (list empty ? W : 0)), release); inside a d_step */
inline UnlockQueue()
{
    assert(!destroyed); assert(holder == _pid); assert((st & QL) != 0);
    holder = 0;
    if
    :: nq == 0 -> st = st & ~(QL | WF)
    :: else -> st = st & ~QL
    fi;
    Inv()
}

/*
 * ReleaseToWaiters(n): LockQueue(n << shift) locks the list, or adds the permits to the count if
 * W cleared meanwhile (and returns 0); then pop up to n oldest waiters, one last fetch_add
 * (unlock, clear W if the list emptied, add the leftover), resume the served waiters. hd/tl:
 * the served chain; nx: a node. (n == 0 returns at once in C++; the harness has n >= 1.)
 */
inline ReleaseToWaiters(n, s, ok, left, hd, tl, nx)
{
    /* RTW 1: LockQueue(add): state_.load(relaxed) */
    d_step { assert(!destroyed); s = st };
    do
    :: (s & WF) == 0 ->
        /* RTW 2: no W (the waiters left meanwhile): CAS(state -> state + add, release), the
           last access; return 0. On failure reload */
        d_step {
            assert(!destroyed);
            if
            :: st == s -> st = s + n * PERMIT; ok = true
            :: else -> s = st; ok = false
            fi;
            Inv()
        };
        if
        :: ok -> break
        :: else
        fi
    /* RTW 3: W and Q set: SpinPause and reload */
    :: (s & WF) != 0 && (s & QL) != 0 -> d_step { (st & QL) == 0; assert(!destroyed); s = st }
    :: (s & WF) != 0 && (s & QL) == 0 ->
        /* RTW 4: W set, Q free: CAS(state -> state | Q, acquire); on failure reload */
        d_step {
            assert(!destroyed);
            if
            :: st == s -> st = s | QL; holder = _pid; ok = true;
                /* the flag was set and we hold the lock: a waiter is queued, the count is 0 */
                assert(nq > 0 && st / PERMIT == 0)
            :: else -> s = st; ok = false
            fi
        };
        if
        :: ok ->
#ifndef BROKEN_LATE_PUBLISH
            /* RTW 5: pop up to n oldest waiters onto the served chain (each is handed a
               permit; the count is not touched) -- the list only, under the lock -- then
               RTW 6: fetch_add((left << shift) - (Q | (list empty ? W : 0)), release): unlock,
               clear W if the list emptied, add the leftover: the last access */
            d_step {
                left = n;
                do
                :: left > 0 && nq > 0 -> PopServed(hd, tl, nx); left--
                :: else -> break
                od;
                assert(!destroyed); assert(holder == _pid); assert((st & QL) != 0);
                holder = 0;
                if
                :: nq == 0 -> st = st + left * PERMIT - QL - WF
                :: else -> assert(left == 0); st = st - QL
                fi;
                Inv();
                left = 0; tl = 0; s = 0; ok = false
            };
            /* RTW 7: ResumeChain(served, kAcquired) */
            ResumeChain(hd, nx, ACQUIRED, BY_REL);
#else
            d_step {
                left = n;
                do
                :: left > 0 && nq > 0 -> PopServed(hd, tl, nx); left--
                :: else -> break
                od
            };
            ResumeChain(hd, nx, ACQUIRED, BY_REL);   /* broken: resume first ... */
            atomic {                                 /* ... and publish after */
                assert(!destroyed); assert(holder == _pid); assert((st & QL) != 0);
                holder = 0;
                if
                :: nq == 0 -> st = st + left * PERMIT - QL - WF
                :: else -> assert(left == 0); st = st - QL
                fi;
                Inv();
                left = 0; tl = 0; s = 0; ok = false
            };
#endif
            break
        :: else
        fi
    od
}

/* Release(n), any thread. */
inline Release(n, s, ok, left, hd, tl, nx)
{
    /* Release 1: state_.load(relaxed) */
    d_step { assert(!destroyed); s = st };
    do
#ifndef BROKEN_NOFLAG_CHECK
    /* Release 2: W set: ReleaseToWaiters(n); return */
    :: (s & WF) != 0 -> ReleaseToWaiters(n, s, ok, left, hd, tl, nx); break
    :: (s & WF) == 0 ->
#else
    :: true ->      /* broken: never looks at W */
#endif
        /* Release 3: CAS(state -> state + add, release): the last access; on failure reload */
        d_step {
            assert(!destroyed);
            if
            :: st == s -> st = s + n * PERMIT; ok = true
            :: else -> s = st; ok = false
            fi;
            Inv()
        };
        if
        :: ok -> break
        :: else
        fi
    od
}

/*
 * Node::OnSuspended(handle), on the scheduler thread once the acquirer is off the processor;
 * then, for a timed wait, the kernel's ArmTimer (after which the timer may fire).
 */
proctype OnSuspended(byte h; bool timed)
{
    byte s, d, res;
    bool ok, c;
#ifdef BROKEN_STALE
    /* broken: a load before the lock decides whether a permit is there */
    d_step { assert(!destroyed); d = st };
#endif
    /* OnSuspended 1: task = handle; LockQueue() */
    LockQueue(s, ok);
#ifdef BROKEN_STALE
    if
    :: d < PERMIT ->
        /* broken: queue on the stale "no permit"; publish with an RMW that does not compare
           (fetch_or W, clear Q) */
        d_step {
            assert(!destroyed); assert(holder == _pid);
            PushBack(h); holder = 0; st = (st | WF) & ~QL; res = PENDING; ok = true; d = 0;
            Inv()
        }
    :: else -> d = 0
    fi;
#endif
    do
#ifdef BROKEN_STALE
    :: ok -> break
#endif
    :: !ok ->
#ifdef CLOSE
        /* OnSuspended 2: no permit: closed_.load() */
        if
        :: s < PERMIT -> d_step { assert(!destroyed); c = closed }
        :: else
        fi;
#endif
#ifdef BROKEN_SPLIT_UNLOCK
        if
        :: s < PERMIT && !c ->
            /* broken: queue, unlock with one RMW (fetch_and ~Q), set W with a second one */
            d_step {
                assert(!destroyed); assert(holder == _pid);
                PushBack(h); res = PENDING; holder = 0; st = st & ~QL; ok = true
            };
            d_step { assert(!destroyed); st = st | WF; Inv() }
        :: else
        fi;
        if
        :: ok -> break
        :: else
        fi;
#endif
        /* OnSuspended 3: decide from the word as the lock (or the failed CAS) left it: take a
           permit; or (CLOSE) closed; or list_.PushBack(this) and desired = state | kWaiters.
           Then CAS(state -> desired - kQueueLock, acq_rel), which decides and unlocks (the last
           access when queued); on failure list_.Remove(this) if pushed and decide again. The
           list steps are folded into the CAS's: only the holder of Q looks at the list. */
        d_step {
            assert(!destroyed); assert(holder == _pid);
            if
            :: s >= PERMIT -> res = ACQUIRED; d = s - PERMIT
#ifdef CLOSE
            :: s < PERMIT && c -> res = CLOSED; d = s
#endif
            :: else -> res = PENDING; d = s | WF; PushBack(h)
            fi;
            if
            :: st == s -> st = d - QL; holder = 0; ok = true
            :: else ->
                s = st; ok = false;
                if
                :: res == PENDING -> Remove(h)
                :: else
                fi
            fi;
            Inv();
            d = 0; c = false
        };
        if
        :: ok -> break
        :: else
        fi
    od;
    if
    /* OnSuspended 4: not queued: status = result; ResumeTask(handle) -- ours to resume */
    :: res != PENDING -> d_step { assert(!gone[h]); status[h] = res; Resume(h, BY_SELF) }
    :: else
    fi;
    /* the kernel's ArmTimer; the locals are cleared for the state space */
    d_step { armed[h] = timed; s = 0; res = 0; ok = false }
}

/* Node::OnTimeout(handle): q = the node was still queued (then the kernel resumes it). */
inline OnTimeout(h, s, ok, q)
{
    /* OnTimeout 1: LockQueue() */
    LockQueue(s, ok);
    /* OnTimeout 2: queued = linked; if queued, list_.Remove(this); UnlockQueue() (the list
       steps folded into the unlock's; atomic, not d_step: LockQueue's loop exits into it) */
    atomic {
        assert(!gone[h]); q = linked[h];
        if
        :: q -> Remove(h)
        :: else
        fi;
        UnlockQueue();
        s = 0
    }
}

#ifdef CLOSE
/* Close(): closed_ = true; LockQueue; TakeAll; UnlockQueue; ResumeChain(all, kClosed). */
proctype Closer()
{
    byte s, hd, nx;
    bool ok;
    /* Close 1: closed_.store(true) */
    d_step { assert(!destroyed); closed = true };
    /* Close 2: LockQueue() */
    LockQueue(s, ok);
    /* Close 3: all = list_.TakeAll() (the nodes keep their links, oldest first);
       UnlockQueue(), the last access to the word and the list */
    atomic {
        assert(holder == _pid);
        hd = lst[0];
        if
        :: hd != 0 ->
            assert(!gone[hd]); nodeNext[hd] = lst[1]; linked[hd] = false;
            if
            :: lst[1] != 0 -> assert(!gone[lst[1]]); nodeNext[lst[1]] = 0; linked[lst[1]] = false
            :: else
            fi
        :: else
        fi;
        lst[0] = 0; lst[1] = 0; nq = 0;
        /* UnlockQueue() on an empty list: fetch_and(~(Q | W)) */
        assert(!destroyed); assert(holder == _pid); assert((st & QL) != 0);
        holder = 0; st = st & ~(QL | WF);
        Inv();
        s = 0
    };
    /* Close 4: ResumeChain(all, kClosed) */
    ResumeChain(hd, nx, CLOSED, BY_CLOSE);
    closeDone = true
}
#endif

#else /* BROKEN_OLD: the previous design, without Semaphore's BusyCount */

/* std::lock_guard on the old SpinLock lock_ */
inline LockQueue(lq_s, lq_ok)
{
    d_step { !lk; assert(!destroyed); lk = true; holder = _pid }
}

inline UnlockQueue()
{
    assert(!destroyed); assert(holder == _pid); lk = false; holder = 0
}

/* the old Release(n): count_.fetch_add(n); if (waiters_.load() != 0) Wake() */
inline Release(n, s, ok, left, hd, tl, nx)
{
    d_step { assert(!destroyed); st = st + n * PERMIT };    /* the permit is there ... */
    d_step { assert(!destroyed); ok = (waiters != 0) };     /* ... and the object read after */
    if
    :: ok ->
        /* the old Wake(): under the lock, while a waiter is queued and TryAcquire wins, pop */
        LockQueue(s, ok);
        do
        :: nq > 0 ->
            TryAcquire(s, ok);
            if
            :: ok -> d_step { PopServed(hd, tl, nx); assert(!destroyed); waiters-- }
            :: else -> break
            fi
        :: else -> break
        od;
        atomic { UnlockQueue(); tl = 0 };
        ResumeChain(hd, nx, ACQUIRED, BY_REL)
    :: else
    fi;
    ok = false
}

/* the old OnSuspended: under the lock push, waiters_++, re-check; if a permit, undo, resume */
proctype OnSuspended(byte h; bool timed)
{
    byte s;
    bool ok;
    LockQueue(s, ok);
    d_step { PushBack(h); assert(!destroyed); waiters++ };
    TryAcquire(s, ok);
    if
    :: ok -> d_step { Remove(h); assert(!destroyed); waiters--; status[h] = ACQUIRED }
    :: else
    fi;
    d_step { UnlockQueue() };
    if
    :: ok -> d_step { Resume(h, BY_SELF) }
    :: else
    fi;
    d_step { armed[h] = timed; s = 0; ok = false }
}

/* the old OnTimeout */
inline OnTimeout(h, s, ok, q)
{
    LockQueue(s, ok);
    d_step {
        q = linked[h];
        if
        :: q -> Remove(h); assert(!destroyed); waiters--
        :: else
        fi;
        UnlockQueue()
    }
}

#endif /* BROKEN_OLD */

/*
 * The timer of one timed wait: fires once the node is armed, if the deadline passes (a free
 * choice, at most MAXFIRE times in a run) before a ResumeTask; else it is cancelled when the
 * wait settles it. Fire: OnTimeout; true -> the kernel resumes the acquirer (timed out).
 */
proctype Timer(byte h)
{
    byte s;
    bool ok, q;
    if
    :: d_step { fires < MAXFIRE && armed[h] && resumed[h] == 0 -> firing[h] = true; fires++ };
        OnTimeout(h, s, ok, q);
        /* q: timed out, the kernel resumes the waiter (SuspendTaskFor returns false); else a
           Release or Close took the node and resumes it. Then Done. */
        d_step {
            if
            :: q -> Resume(h, BY_TIMER)
            :: else
            fi;
            firing[h] = false; q = false
        }
    :: settled[h]                       /* the wait ended first: the node left the heap */
    fi
}

/*
 * One SemaphoreCore::Acquire() / Acquire(timeout) (or co_await of its awaiters): Ready
 * (TryAcquireOrClosed); else suspend, OnSuspended, and once resumed (and the timer settled)
 * the result: TimedOut if the timer resumed it, else the status its resumer left.
 */
inline AcquireOnce(k_timed, k_res, k_s, k_ok, k_h, k_c)
{
    /* Ready 1: TryAcquire() */
    TryAcquire(k_s, k_ok);
    if
    :: k_ok -> k_res = ACQUIRED; k_ok = false
    :: else ->
#ifdef CLOSE
        /* Ready 2: closed_.load(); if closed, TryAcquire() again (else Closed) */
        d_step { assert(!destroyed); k_c = closed };
        if
        :: k_c ->
            k_c = false;
            TryAcquire(k_s, k_ok);
            if
            :: k_ok -> k_res = ACQUIRED; k_ok = false
            :: else -> k_res = CLOSED
            fi
        :: else -> k_res = PENDING
        fi
#else
        k_res = PENDING
#endif
    fi;
    if
    :: k_res == PENDING ->
        /* SuspendTask(&node) / SuspendTaskFor(&node, timeout): off the processor, OnSuspended */
        atomic {
            k_h = nextHandle; nextHandle++; assert(nextHandle <= MAXH);
            if
            :: k_timed -> run Timer(k_h); run OnSuspended(k_h, true)
            :: else -> run OnSuspended(k_h, false)
            fi
        };
        /* blocked until resumed; then SettleTimer (a firing timer finishes first; then it
           never fires), and await_resume / Acquire's return: TimedOut, or the status. The
           node's frame is gone from here on */
        d_step {
            resumed[k_h] > 0 && !firing[k_h];
            settled[k_h] = k_timed;
            if
            :: resumer[k_h] == BY_TIMER -> assert(status[k_h] == PENDING); k_res = TIMEDOUT
            :: else ->
                assert(status[k_h] == ACQUIRED || status[k_h] == CLOSED);
                assert(resumer[k_h] != BY_REL || status[k_h] == ACQUIRED);
                assert(resumer[k_h] != BY_CLOSE || status[k_h] == CLOSED);
                k_res = status[k_h]
            fi;
            gone[k_h] = true; status[k_h] = 0; resumer[k_h] = 0; armed[k_h] = false; k_h = 0
        }
    :: else
    fi
}

/* An acquirer taking k permits; a timed-out round is retried; it stops at Closed. */
proctype Acquirer(byte k; bool mayTime)
{
    byte n, res, s, h;
    bool ok, c, timed;
    do
    :: n < k ->
        if
        :: mayTime -> timed = true
        :: true -> timed = false
        fi;
        AcquireOnce(timed, res, s, ok, h, c);
        if
        :: res == ACQUIRED -> d_step { got++; n++; res = 0; timed = false }
        :: res == TIMEDOUT -> d_step { res = 0; timed = false }     /* try again */
#ifdef CLOSE
        :: res == CLOSED -> break
#endif
        fi
    :: else -> break
    od;
    atomic { acqDone++; n = 0; res = 0; timed = false };
    if
    :: acqDone == NACQ ->
        /* the last acquirer back destroys the semaphore (~SemaphoreCore: TC_CHECK that the
           list is empty) as soon as no call on it can start and every call still running has
           made its last access by the contract */
#ifdef CLOSE
        (got == TOTAL || relDone == NREL) && (closeDone || closeResumed > 0);
#else
        assert(got == TOTAL);
#endif
        d_step { assert(nq == 0); destroyed = true }
    :: else
    fi
}

proctype Releaser(byte n)
{
    byte s, left, hd, tl, nx;
    bool ok;
    Release(n, s, ok, left, hd, tl, nx);
    atomic { relDone++; s = 0; ok = false }     /* (atomic: Release's loops exit into it) */
}

init
{
    byte h = 1;
    atomic {
        run Acquirer(KA, true); run Acquirer(KB, false);
        run Releaser(N1);
#if N2 > 0
        run Releaser(N2);
#endif
#ifdef CLOSE
        run Closer()
#endif
    };
    (_nr_pr == 1);      /* everyone finished: OnSuspended calls and timers included */
    assert(destroyed);
    /* every handle handed out was resumed exactly once */
    do
    :: h < nextHandle -> assert(resumed[h] == 1); h++
    :: else -> break
    od;
    /* conservation: every permit released was taken by one Acquire or is left in the count */
    assert(TOTAL == got + st / PERMIT);
    assert(nq == 0 && holder == 0);
#ifndef BROKEN_OLD
    assert((st & (WF | QL)) == 0)
#endif
}
