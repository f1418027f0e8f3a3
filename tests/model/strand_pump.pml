/*
 * strand_pump.pml -- the strand's one pump ("one pump per strand"): phases Idle,
 * Scheduled, Running, Exited, with submitters racing the pump's idle decision.
 *
 * NSUB submitter threads each submit PER tasks; a base executor of NWORKERS threads resumes
 * whatever coroutine handle is queued on it (here only the pump). The pump (RunPump and
 * StrandCore in strands/src/StrandCore.cpp) runs up to BATCH tasks per turn, then in its
 * await_suspend, under the strand's lock, either queues itself on the base again (the batch is
 * spent and work is waiting), continues inline (work came, batch not spent), goes Idle, or ends
 * (closed). The owner closes the strand
 * either once every task has run (a drain, then ~Strand) or at any moment (~Strand drops what
 * is queued, and later submits are dropped). Proves:
 *   - no lost task: every submitted task runs, exactly once, in each submitter's order, or is
 *     dropped by the close, never both (else the owner waits for ever: invalid end state, or an
 *     assertion);
 *   - never two resumptions of the pump at once, never two hand-offs of it to the base;
 *   - the base never resumes a pump that is still running (or has ended);
 *   - the pump ends once the strand is closed, and nothing is left queued anywhere.
 *
 * Variants (spin -D...):
 *   BROKEN        the idle decision reads the queue under the lock but publishes Idle after
 *                 releasing it: a submit in between sees Running, only queues, and its task
 *                 is never run. (With NO_CLOSE the owner only drains, so the one possible
 *                 counterexample is the lost task itself: the owner waits for it for ever.
 *                 With a close, the first one found is usually a close the pump missed.)
 *   BROKEN_EARLY  the decision is made under the lock but before the pump has suspended (in
 *                 the loop, not in await_suspend): a submit sees Idle and the base resumes the
 *                 pump while it is still running.
 */

#define NSUB     2      /* submitting threads */
#define PER      2      /* tasks per submitter */
#define NTASK    4      /* NSUB * PER */
#define BATCH    2      /* StrandOptions::batch: tasks per turn */
#define NWORKERS 2      /* base executor threads */

mtype = { IDLE, SCHEDULED, RUNNING, EXITED };

/* StrandCore, guarded by lock */
bool lock;
mtype phase = IDLE;
chan queue = [NTASK] of { byte };   /* the strand's queue of tasks */
bool closed;

/* the base executor's queue of coroutine handles (the pump is the only one here) */
chan base = [2] of { bit };

/* the pump coroutine as the language sees it */
bool pumpSuspended = true;  /* suspended: at its initial suspend or at an await */
byte pumpRunning;           /* resumptions of the pump in progress */
bool pumpEnded;             /* the coroutine ran to its end; its frame is gone */

byte ran[NTASK];            /* how many times each task ran or was dropped */
byte lastRun[NSUB];         /* per submitter, the last task of it that ran (order check) */
byte ranCount;
byte droppedCount;
byte submittersDone;

inline Lock()   { atomic { !lock -> lock = true } }
inline Unlock() { lock = false }

/* base.Submit(pump): only whoever moved the phase to Scheduled hands the pump over, so there is
 * never a second hand-off outstanding. */
inline HandOff() { atomic { assert(len(base) == 0); base!1 } }

/* Strand::Submit(task), any thread. */
proctype Submitter(byte id)
{
    byte i = 1;
    bool schedule;
    do
    :: i <= PER ->
        Lock();
        if
        :: closed ->                            /* a closed strand drops what it is given */
            d_step { ran[id * PER + i - 1]++; droppedCount++ };
            schedule = false
        :: else ->
            queue!(id * PER + i);               /* Submit 1: queue the task */
            if
            /* Submit 2: an Idle pump is ours to hand to the base; other phases only queue */
            :: phase == IDLE -> phase = SCHEDULED; schedule = true
            :: else -> assert(phase != EXITED); schedule = false
            fi
        fi;
        Unlock();
        if
        :: schedule -> HandOff()                /* Submit 3: base.Submit(pump), outside the lock */
        :: else
        fi;
        i++
    :: else -> break
    od;
    submittersDone++
}

/* how a turn ends (StrandCore::EndTurn's TurnEnd, with the hand-off split out) */
#define END_SUSPEND  0      /* Idle: suspended, queued nowhere */
#define END_HANDOFF  1      /* Scheduled: suspended and queued on the base again */
#define END_CONTINUE 2      /* work came but the batch is not spent: resume inline */
#define END_EXIT     3      /* closed: the coroutine ends */

/* StrandCore::EndTurn, called from the pump's await_suspend (EndTurnAwaiter): the idle decision,
 * made under the strand's lock while the coroutine is already suspended. */
inline EndTurn(spent, how)
{
    Lock();
    if
    :: closed -> phase = EXITED; how = END_EXIT                             /* ExitLocked */
    :: !closed && len(queue) == 0 -> phase = IDLE; how = END_SUSPEND        /* IdleLocked */
    :: !closed && len(queue) > 0 && !spent -> how = END_CONTINUE            /* still Running */
    :: !closed && len(queue) > 0 && spent -> phase = SCHEDULED; how = END_HANDOFF
    fi;
    Unlock()
}

/* The broken decision: the queue is read under the lock, the phase published after it. */
inline EndTurnUnlocked(spent, how)
{
    Lock();
    if
    :: closed -> how = END_EXIT
    :: !closed && len(queue) == 0 -> how = END_SUSPEND
    :: !closed && len(queue) > 0 && !spent -> how = END_CONTINUE
    :: !closed && len(queue) > 0 && spent -> how = END_HANDOFF
    fi;
    Unlock();
    if
    :: how == END_EXIT -> phase = EXITED
    :: how == END_SUSPEND -> phase = IDLE
    :: how == END_HANDOFF -> phase = SCHEDULED
    :: how == END_CONTINUE
    fi
}

/* The pump coroutine (RunPump) from one resumption by the base until it suspends or ends:
 *   for (;;) { spent = RunBatch(); if (!co_await EndTurnAwaiter{...}) co_return; }
 * The turn begins (Running) at its first take, under that take's lock; a strand closed while
 * the pump was queued takes nothing, and EndTurn ends the pump. */
inline PumpResumption(t, n, spent, how)
{
    /* the base resumes it: only ever a suspended, live pump, and only once at a time */
    d_step {
        assert(pumpSuspended && !pumpEnded);
        pumpSuspended = false; pumpRunning++; assert(pumpRunning == 1)
    };
    do
    :: true ->
        /* RunBatch: up to BATCH tasks, each popped under the lock and run outside it; each
         * take (TakeChunk) that finds the strand open marks the turn Running */
        n = 0;
        spent = false;
        do
        :: n == BATCH -> spent = true; break
        :: else ->
            Lock();
            if
            :: !closed ->
                assert(phase == SCHEDULED || phase == RUNNING); phase = RUNNING
            :: else
            fi;
            if
            :: !closed && len(queue) > 0 -> queue?t; Unlock();
                /* run the task inline, under the strand's ExecutorScope */
                d_step {
                    assert(ran[t - 1] == 0); ran[t - 1]++; ranCount++;
                    assert(t > lastRun[(t - 1) / PER]); lastRun[(t - 1) / PER] = t
                };
                n++
            :: else -> Unlock(); break
            fi
        od;
#ifdef BROKEN_EARLY
        EndTurn(spent, how);                                /* broken: decided while running */
        atomic { pumpRunning--; pumpSuspended = true };
#else
        /* co_await EndTurnAwaiter: the coroutine is suspended from await_suspend on */
        atomic { pumpRunning--; pumpSuspended = true };
#ifdef BROKEN
        EndTurnUnlocked(spent, how);
#else
        EndTurn(spent, how);
#endif
#endif
        if
        :: how == END_HANDOFF -> HandOff(); break   /* may run elsewhere now: touch nothing */
        :: how == END_SUSPEND -> break
        :: how == END_EXIT -> pumpEnded = true; break   /* await_suspend false, co_return */
        :: how == END_CONTINUE ->                   /* await_suspend false: resumes inline */
            d_step {
                assert(pumpSuspended && !pumpEnded);
                pumpSuspended = false; pumpRunning++; assert(pumpRunning == 1)
            }
        fi
    od
}

/* A base executor thread. */
proctype Worker()
{
    byte t, n, how;
    bool spent;
end: do
    :: base?_ -> PumpResumption(t, n, spent, how)
    od
}

/* The strand's owner: ~Strand, after a drain or at any moment. */
proctype Owner()
{
#ifdef NO_CLOSE
    (ranCount == NTASK)     /* drain only: every submitted task runs */
#else
    byte t;
    if
    :: (ranCount == NTASK)  /* drain: every submitted task ran, none lost */
    :: skip                 /* or close now */
    fi;
    Lock();
    closed = true;
    do                      /* queued tasks are dropped */
    :: len(queue) > 0 -> queue?t; d_step { assert(ran[t - 1] == 0); ran[t - 1]++; droppedCount++ }
    :: else -> break
    od;
    if
    :: phase == IDLE -> assert(pumpSuspended); phase = EXITED; pumpEnded = true   /* frees it */
    :: else     /* Scheduled or Running: the pump ends at its next decision */
    fi;
    Unlock()
#endif
}

init
{
    byte i;
    atomic {
        run Submitter(0); run Submitter(1);
        i = 0;
        do
        :: i < NWORKERS -> run Worker(); i++
        :: else -> break
        od;
        run Owner()
    };
#ifdef NO_CLOSE
    /* every task ran and the pump went idle (else: invalid end state) */
    (submittersDone == NSUB && ranCount == NTASK && phase == IDLE && pumpSuspended
     && len(base) == 0);
#else
    /* the pump ends, and nothing is left anywhere (else: invalid end state) */
    (submittersDone == NSUB && phase == EXITED && pumpEnded && pumpRunning == 0 && len(base) == 0);
#endif
    assert(len(queue) == 0 && ranCount + droppedCount == NTASK);
    i = 0;
    do
    :: i < NTASK -> assert(ran[i] == 1); i++
    :: else -> break
    od
}
