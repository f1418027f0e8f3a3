/*
 * event_manual.pml -- the multi-waiter ManualResetEvent: state and the chain of waiters in one
 * atomic word, UNSET, SET or the newest suspended waiter's handle, older waiters linked behind
 * it (sync/include/TC/Synchronization/detail/OneWordEvent.h with ManyWaiters).
 *
 * Waiter A waits ROUNDS times and closes the gate (Reset) after each pass, as the gate
 * ping-pong stress test does; waiter B waits once, anywhere in A's rounds; a setter thread sets
 * once per round of A, as soon as A has closed the gate behind its previous round. Then
 * a final phase: with the gate closed and every earlier Set over, A and B wait again, both
 * publish, one Set resumes both, and whichever returns first destroys the event at once.
 * Proves, under sequential consistency:
 *   - every handle reaches ResumeTask exactly once;
 *   - no lost wake-up: every Wait returns (else invalid end state);
 *   - no early pass: a Set resumes only waiters that published before it opened the event (its
 *     opening counts `opens`; a waiter notes the count when it publishes);
 *   - lifetime: a Set touches only the claimed waiters' links after its exchange, so the first
 *     waiter back may destroy the event while the Set still resumes the other.
 *
 * Variants (spin -D...):
 *   BROKEN_SPLIT  a rejected design: a flag beside a waiter stack. Set stores the
 *                 flag, then takes the stack; a waiter pushes itself, then re-checks the flag.
 *                 A Set whose two steps straddle A's pass, Reset and next publication resumes
 *                 A's next wait: an early pass. The re-check also reads the event after the
 *                 publication, so a waiter back first may not destroy it (that design resumed
 *                 its creator last for this).
 *   NO_DESTROY    nobody destroys the event (with BROKEN_SPLIT: only the early pass is left).
 */

#define ROUNDS  2
#define UNSET   0
#define SET     1
#define FIRSTH  2       /* handles, one per wait that suspends: FIRSTH, FIRSTH+1, ... */
#define MAXH    9
#define NOBODY  0       /* the end of a chain */
#define A_ROUND 0       /* which wait a publication belongs to (harness) */
#define B_FIRST 1
#define FINAL   2

byte word = UNSET;      /* the event's one word (BROKEN_SPLIT: the stack's head only) */
#ifdef BROKEN_SPLIT
bool flag;              /* BROKEN_SPLIT: the separate state */
#endif
bool destroyed;         /* the event's storage is gone */

byte nextHandle = FIRSTH;
byte link[MAXH];        /* each waiter's SuspendedTaskEntry::next: the waiter's, not the event's */
byte resumed[MAXH];     /* how many times ResumeTask got each handle */
byte publishedAt[MAXH]; /* `opens` when the handle was published */
byte opens;             /* Sets that opened the event so far (ghost) */

byte arrivedA;          /* A's rounds passed and closed again (harness) */
bool arrivedB;          /* B's first wait has passed or published (harness) */
bool closedForFinal;    /* A closed the gate for the final phase (harness) */
byte finalPublished;    /* waiters published in the final phase (harness) */
bool finalPhase;        /* the setter's rounds are over (harness) */

inline ResumeTask(rt_h)
{
    d_step {
        assert(rt_h >= FIRSTH && rt_h < nextHandle); assert(resumed[rt_h] == 0); resumed[rt_h]++
    }
}

/* A waiter resumed by a Set: that Set opened the event after the waiter published. */
inline ResumeBySet(rs_h, rs_open)
{
    assert(rs_open > publishedAt[rs_h]);
    ResumeTask(rs_h)
}

/* Ghost bookkeeping, inside the publishing step: when, and for whom. */
inline NotePublished(np_h, np_role)
{
    publishedAt[np_h] = opens;
    if
    :: np_role == B_FIRST -> arrivedB = true
    :: np_role == FINAL -> finalPublished++
    :: else
    fi
}

/* OnSuspended(task): publish (push onto the chain) unless the event is set. */
proctype OnSuspended(byte h; byte role)
{
    byte seen;
#ifdef BROKEN_SPLIT
    byte older;
#endif
    bool ok;
#ifndef BROKEN_SPLIT
    do
    /* OnSuspended 1: load the word */
    :: d_step { assert(!destroyed); seen = word };
        if
        :: seen == SET ->   /* never published: ours to resume */
            d_step {
                if
                :: role == B_FIRST -> arrivedB = true
                :: else
                fi
            };
            ResumeTask(h);
            break
        :: else ->
            /* OnSuspended 2: link to the older waiters, then CAS seen -> h */
            link[h] = seen;     /* UNSET is NOBODY: the end of the chain */
            d_step {
                assert(!destroyed);
                if
                :: word == seen ->
                    word = h; ok = true; NotePublished(h, role)
                :: else -> ok = false
                fi
            };
            if
            :: ok -> break      /* the CAS was the last access to the event */
            :: else
            fi
        fi
    od
#else
    /* push onto the stack: CAS loop on the head */
    do
    :: d_step { assert(!destroyed); seen = word };
        link[h] = seen;
        d_step {
            assert(!destroyed);
            if
            :: word == seen -> word = h; ok = true; NotePublished(h, role)
            :: else -> ok = false
            fi
        };
        if
        :: ok -> break
        :: else
        fi
    od;
    /* re-check: the flag is set, so resume everyone on the stack (they may pass) */
    skip;   /* (spin: a break may not jump into a d_step) */
    d_step { assert(!destroyed); ok = flag };
    if
    :: ok ->
        d_step { assert(!destroyed); seen = word; word = NOBODY };
        do
        :: seen >= FIRSTH -> older = link[seen]; ResumeTask(seen); seen = older
        :: else -> break
        od
    :: else
    fi
#endif
}

/* Wait(): returns at once if set, else suspends until a Set (or its own publication) resumes it. */
inline Wait(w_h, w_set, w_role)
{
    /* Wait 1: fast path, a load */
#ifndef BROKEN_SPLIT
    d_step { assert(!destroyed); w_set = (word == SET) };
#else
    d_step { assert(!destroyed); w_set = flag };
#endif
    if
    :: w_set
    :: else ->
        /* Wait 2: TC::SuspendTask(this): off the processor, then OnSuspended(handle) */
        d_step { w_h = nextHandle; nextHandle++; assert(nextHandle <= MAXH) };
        run OnSuspended(w_h, w_role);
        (resumed[w_h] > 0)  /* returns once ResumeTask(handle) */
    fi
}

/* Reset(): CAS SET -> UNSET. */
inline Reset()
{
#ifndef BROKEN_SPLIT
    d_step {
        assert(!destroyed);
        if
        :: word == SET -> word = UNSET
        :: else
        fi
    }
#else
    d_step { assert(!destroyed); flag = false }
#endif
}

/* Set(): any thread. */
inline Set(s_head, s_open, s_older)
{
#ifndef BROKEN_SPLIT
    /* Set 1: exchange(SET): opens the event and claims every published waiter in one step */
    d_step {
        assert(!destroyed); s_head = word; word = SET; opens++; s_open = opens
    };
    if
    :: s_head == UNSET || s_head == SET -> skip
    :: else ->
        /* Set 2: newest first; the link is read before its ResumeTask. No access to the event. */
        do
        :: s_head >= FIRSTH -> s_older = link[s_head]; ResumeBySet(s_head, s_open); s_head = s_older
        :: else -> break
        od
    fi
#else
    d_step { assert(!destroyed); flag = true; opens++; s_open = opens };
    d_step { assert(!destroyed); s_head = word; word = NOBODY };
    do
    :: s_head >= FIRSTH -> s_older = link[s_head]; ResumeBySet(s_head, s_open); s_head = s_older
    :: else -> break
    od
#endif
}

/* The first waiter back from the final phase destroys the event (not with NO_DESTROY). */
inline Destroy()
{
#ifndef NO_DESTROY
    d_step {
        if
        :: !destroyed -> destroyed = true
        :: else
        fi
    }
#else
    skip
#endif
}

proctype WaiterA()
{
    byte h, round;
    bool set;
    do
    :: round < ROUNDS ->
        round++;
        Wait(h, set, A_ROUND);
        Reset();    /* closes the gate it passed, as the stress test's parties do */
        arrivedA = round
    :: else -> break
    od;
    /* final phase: every Set of the rounds is over; close the gate, wait, and destroy the event
       as soon as this wait returns if B is not back first */
    finalPhase;
    Reset();
    closedForFinal = true;
    Wait(h, set, FINAL);
    Destroy()
}

proctype WaiterB()
{
    byte h;
    bool set;
    Wait(h, set, B_FIRST);
    arrivedB = true;    /* passed at once (or published: OnSuspended noted it) */
    closedForFinal;
    Wait(h, set, FINAL);
    Destroy()
}

proctype Setter()
{
    byte k = 1, head, open, older;
    do
    :: k <= ROUNDS -> (arrivedA >= k - 1); Set(head, open, older); k++
    :: else -> break
    od;
    /* B must not be left waiting behind A's Resets: one more Set once B has passed or published */
    arrivedB;
    (arrivedA == ROUNDS);
    Set(head, open, older);
    finalPhase = true;
    (finalPublished == 2);
    Set(head, open, older)  /* the first waiter back destroys the event while this runs */
}

init
{
    byte h = FIRSTH;
    atomic { run WaiterA(); run WaiterB(); run Setter() };
    (_nr_pr == 1);      /* everyone finished, OnSuspended calls included */
    do
    :: h < nextHandle -> assert(resumed[h] == 1); h++
    :: else -> break
    od
}
