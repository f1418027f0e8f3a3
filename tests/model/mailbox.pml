/*
 * mailbox.pml -- the single-waiter Mailbox of the custom-primitives guide on an
 * abstraction of the kernel's suspend protocol.
 *
 * A client task and a service task talk through two mailboxes (requests, replies) for ROUNDS
 * rounds, as the guide's Ask/Serve do; both sides Put and both sides Take, so every Put races a
 * Take that is about to suspend. Proves, under sequential consistency:
 *   - every handle reaches ResumeTask exactly once (assert in ResumeTask, and at the end);
 *   - no lost wake-up: every Take returns (else a task blocks for ever: invalid end state);
 *   - values arrive in order and nothing is left behind.
 *
 * Variants (spin -D...):
 *   BROKEN        OnSuspended does not re-check value_ after publishing: a lost wake-up.
 *   BROKEN_CLAIM  the re-check claims the handle with a load and a store instead of one
 *                 exchange: a Put and the re-check can both resume it (double resume).
 */

#ifndef ROUNDS
#define ROUNDS 2        /* request/reply rounds; 3 grows past 40 million states */
#endif
#define NMB    2        /* mailboxes */
#define REQ    0        /* requests: client -> service */
#define REP    1        /* replies: service -> client */
#define MAXH   12       /* bound on handles handed out (asserted) */

byte value[NMB];        /* Mailbox::value_  (std::atomic<int>, 0 = empty) */
byte waiter[NMB];       /* Mailbox::waiter_ (std::atomic<SuspendedTask>, 0 = nullptr) */

/* Kernel abstraction. A handle is a number > 0, one per SuspendTask call. */
byte nextHandle = 1;    /* next handle the kernel hands out */
byte resumed[MAXH];     /* how many times ResumeTask got each handle */

/* ResumeTask(task): makes the task runnable again; a handle must arrive exactly once. */
inline ResumeTask(rt_h)
{
    d_step {
        assert(rt_h > 0 && rt_h < nextHandle); assert(resumed[rt_h] == 0); resumed[rt_h]++
    }
}

/*
 * ISuspendCallback::OnSuspended, run by the scheduler thread once the task is off the
 * processor. A process of its own: the resumed task may run (on another worker) and even
 * suspend again before this call returns, so its steps interleave with everything.
 */
proctype OnSuspended(byte mb; byte h)
{
    byte w;
    /* OnSuspended 1: waiter_.store(task, seq_cst) -- publish the waiter */
    waiter[mb] = h;
#ifndef BROKEN
    if
    /* OnSuspended 2: value_.load(seq_cst) != 0 -- re-check: a Put may have missed the waiter */
    :: value[mb] != 0 ->
#ifndef BROKEN_CLAIM
        /* OnSuspended 3: waiter_.exchange(nullptr, acq_rel) -- claim the handle */
        d_step { w = waiter[mb]; waiter[mb] = 0 };
#else
        w = waiter[mb];  /* broken: load ...                                   */
        waiter[mb] = 0;  /* ... then store; a Put's exchange fits between them */
#endif
        /* OnSuspended 4: if (waiter) TC::ResumeTask(waiter) */
        if
        :: w != 0 -> ResumeTask(w)
        :: else
        fi
    :: else
    fi
#endif
}

/*
 * SuspendTask(this): the task goes off the processor, the kernel calls OnSuspended(handle)
 * outside the task, and SuspendTask returns once someone passed that handle to ResumeTask.
 * The task takes no step between the two, so spawning OnSuspended here is "after the switch".
 */
inline SuspendTask(st_mb, st_h)
{
    d_step { st_h = nextHandle; nextHandle++; assert(nextHandle < MAXH) };
    run OnSuspended(st_mb, st_h);
    (resumed[st_h] > 0)    /* blocked until ResumeTask(handle) */
}

/* Mailbox::Put(value), callable from any thread. */
inline Put(p_mb, p_v, p_w)
{
    /* Put 1: value_.store(value, seq_cst) -- the state first */
    value[p_mb] = p_v;
    /* Put 2: waiter_.exchange(nullptr, acq_rel) -- then look for a waiter */
    d_step { p_w = waiter[p_mb]; waiter[p_mb] = 0 };
    /* Put 3: if (waiter) TC::ResumeTask(waiter) -- whoever takes the handle resumes */
    if
    :: p_w != 0 -> ResumeTask(p_w)
    :: else
    fi
}

/* Mailbox::Take(), task only, one waiter at a time. */
inline Take(t_mb, t_v, t_h)
{
    do
    /* Take 1: value_.exchange(0, acq_rel) */
    :: d_step { t_v = value[t_mb]; value[t_mb] = 0 };
        if
        :: t_v != 0 -> break
        /* Take 2: TC::SuspendTask(this), then loop to the exchange again */
        :: else -> SuspendTask(t_mb, t_h)
        fi
    od
}

/* The guide's Ask: send a request, wait for the reply. */
proctype Client()
{
    byte k = 1, v, w, h;
    do
    :: k <= ROUNDS ->
        Put(REQ, k, w);
        Take(REP, v, h);
        assert(v == 2 * k);
        k++
    :: else -> break
    od
}

/* The guide's Serve: answer each request with twice its value. */
proctype Service()
{
    byte k = 1, v, w, h;
    do
    :: k <= ROUNDS ->
        Take(REQ, v, h);
        assert(v == k);
        Put(REP, 2 * v, w);
        k++
    :: else -> break
    od
}

init
{
    byte h = 1;
    atomic { run Client(); run Service() };
    /* every process, the OnSuspended calls included, has finished (else: invalid end state) */
    (_nr_pr == 1);
    /* every handle handed out was resumed exactly once: no lost and no double wake-up */
    do
    :: h < nextHandle -> assert(resumed[h] == 1); h++
    :: else -> break
    od;
    /* all values taken, no waiter left published */
    assert(value[REQ] == 0 && value[REP] == 0);
    assert(waiter[REQ] == 0 && waiter[REP] == 0)
}
