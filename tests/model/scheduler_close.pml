/*
 * scheduler_close.pml -- ~Scheduler's last look against submissions from outside its threads
 * (SchedulerCore::Shutdown, Close, EnterFromOutside in kernel/src/SchedulerLifetime.cpp,
 * LeaveFromOutside in SchedulerCore.h).
 *
 * NSUB outside threads each submit PER items (Submit, Start or MoveCurrentTaskTo) until one is
 * refused. A task of the scheduler, live when the destructor starts, submits one item from
 * inside (no admission) and ends; the first outside item, when it runs, submits a follow-up
 * from inside too. A worker runs what is queued until it is told to exit and finds nothing.
 * The destructor drains (no live task, nothing queued), closes, waits until no admitted
 * submission is in flight, drains again, stops the worker and frees the core. Admission is one
 * read-modify-write of the word that holds both the count and the closed flag (d_step here).
 * Proves:
 *   - no lost item: every accepted item runs, exactly once, before the core is freed;
 *   - every refused item never runs, and a submitter is refused only after the close;
 *   - nothing runs after the core is freed, nothing is left queued.
 *
 * Variants (spin -D...):
 *   BROKEN_FLAG    a flag alone: the submitter reads `closed`, then enqueues, with no count.
 *                  It reads the flag before the close and enqueues after the worker stopped.
 *   BROKEN_NOWAIT  the count is kept, but the destructor does not wait for it after closing:
 *                  an admitted item is queued after its last look.
 */

#define NSUB  2             /* outside submitters */
#define PER   2             /* items each */
#define NOUT  4             /* NSUB * PER */
#define INSIDE_TASK  5      /* the item the live task submits from inside */
#define FOLLOW_UP    6      /* the item item 1 submits from inside when it runs */
#define NITEM 7             /* ids 1..6; 0 unused */

chan queue = [NITEM] of { byte };

byte count;                 /* enqueuing_: admitted submissions in flight */
bool closed;                /* enqueuing_'s kEnqueueClosed */
byte live = 1;              /* the scheduler's live tasks: the one running when ~Scheduler starts */
bool exiting;               /* exit_ */
bool workerDone;
bool freed;                 /* the core is gone */

byte ran[NITEM];
bool accepted[NITEM];
bool refused[NITEM];
byte submittersDone;

inline Run(t)
{
    d_step { assert(!freed); assert(ran[t] == 0); ran[t]++ }
}

/* An outside submitter: Submit / Start / MoveCurrentTaskTo. */
proctype Submitter(byte id)
{
    byte i = 1;
    bool wasClosed;
    do
    :: i <= PER ->
#ifdef BROKEN_FLAG
        wasClosed = closed;                         /* check ... */
        if
        :: wasClosed -> refused[id * PER + i] = true; break
        :: else -> accepted[id * PER + i] = true; queue!(id * PER + i)   /* ... then enqueue */
        fi;
#else
        d_step { count++; wasClosed = closed };     /* EnterFromOutside: one fetch_add */
        if
        :: wasClosed ->
            d_step { count--; refused[id * PER + i] = true };   /* refused: counted out */
            break
        :: else ->
            accepted[id * PER + i] = true;
            queue!(id * PER + i);                   /* EnqueueShared */
            count--                                 /* LeaveFromOutside (release) */
        fi;
#endif
        i++
    :: else -> break
    od;
    submittersDone++
}

/* The task running on the scheduler as its destructor starts: it submits from inside, ends. */
proctype Task()
{
    queue!INSIDE_TASK;
    accepted[INSIDE_TASK] = true;
    live--
}

/* The worker loop: take and run; leave only when told to and nothing is left. */
proctype Worker()
{
    byte t;
    do
    :: queue?t ->
        if
        :: t == 1 -> queue!FOLLOW_UP; accepted[FOLLOW_UP] = true  /* from inside: no admission */
        :: else
        fi;
        Run(t)
    :: atomic { exiting && len(queue) == 0 } -> break
    od;
    workerDone = true
}

/* ~Scheduler: Shutdown, then the core is freed. */
proctype Destructor()
{
    (live == 0 && len(queue) == 0);                 /* the first drain */
    closed = true;                                  /* Close: fetch_or */
#ifndef BROKEN_NOWAIT
    (count == 0);                                   /* every admitted item is queued */
#endif
    (live == 0 && len(queue) == 0);                 /* the second drain */
    exiting = true;
    (workerDone);                                   /* join */
    /* the user's side of the contract: the threads that submit have stopped before the
     * destructor returns (they were refused, or gave up) */
    (submittersDone == NSUB);
    freed = true
}

init
{
    byte i;
    atomic {
        run Submitter(0); run Submitter(1);
        run Task(); run Worker(); run Destructor()
    };
    (freed);
    assert(len(queue) == 0);
    i = 1;
    do
    :: i < NITEM ->
        assert(!(accepted[i] && refused[i]));
        assert(ran[i] == (accepted[i] -> 1 : 0));   /* accepted: ran once; else never */
        i++
    :: else -> break
    od
}
