/*
 * busycount.pml -- sync/include/TC/Synchronization/detail/BusyCount.h: scopes counted in two
 * halves of one word, and drains that wait only for the scopes begun before their first look.
 *
 * Two threads each open and close SCOPES scopes; each scope reads the epoch (a relaxed load)
 * and counts in the half it read in a separate step, so a flip can fall between the two (a
 * stale scope counts in the old half). Two drainers run at any moment: D1 drains from inside a
 * scope of its own (a coroutine resumed inline from inside it), which may lie in either half by
 * then; D2 has none. Proves, under sequential consistency (the C++ orderings are argued in the
 * header):
 *   - safety: when a drainer returns, no scope that was open at its first look is still open,
 *     except its own (assert);
 *   - no deadlock: every drain returns (invalid end state otherwise), also the drainer that
 *     waits for the other's own scope.
 * Each step of the word is one atomic step of the model (d_step), as each is one load or one
 * read-modify-write of the word in C++.
 *
 * Variants (spin -D...):
 *   BROKEN_DIRTY    a flip into a half that still holds the flipper's own scope bumps that half's
 *                   flip counter, as a flip into an empty half does: the other drainer takes it
 *                   for proof that the half is clear and returns while D1's scope is open.
 *   BROKEN_ONEHALF  a drainer waits only for the half current at its look, not for the scopes
 *                   left in the old half (begun before an earlier flip).
 */

#ifndef SCOPES
#define SCOPES 2       /* scopes per scope thread */
#endif
#define OWNBIT 16      /* open-mask bit of D1's own scope; scope (t, r) is bit 2*t + r */

byte cnt[2];           /* the two counts */
bit epoch;             /* the current half (one-hot bits 40 and 60 in C++) */
byte flips[2];         /* clean flips into each half (7 bits each in C++; no wrap here) */
byte open;             /* which scopes are open: counted and not yet left */
byte returned;         /* drains returned */

proctype Scoper(byte t)
{
    byte r = 0;
    bit h;
    do
    :: r < SCOPES ->
        /* Scope 1: word_.load(relaxed) -- picks the half (may be stale by the next step) */
        h = epoch;
        /* Scope 2: word_.fetch_add(unit, seq_cst) -- counted in the half it read */
        d_step { cnt[h]++; open = open | (1 << (2 * t + r)) };
        /* ~Scope: word_.fetch_sub(unit, release) -- leaves the half it entered; last access */
        d_step { cnt[h]--; open = open & ~(1 << (2 * t + r)) };
        r++
    :: else -> break
    od
}

/*
 * Drain: the first look, then the loop of DrainFrom. own[h] is the drainer's own scopes in
 * half h (BusyFramesOnThisThread); clear[h] that half was seen at or below own[h], or was
 * flipped into while empty, since the look.
 */
proctype Drainer(bit hasOwn)
{
    bit ownHalf;
    byte own[2];
    byte pre;                   /* the scopes open at the look */
    byte lookFlips[2];
    bit clear[2];
    bit cur;
    byte w0, w1, wf0, wf1;      /* the word as last read */
    bit we;
    if
    :: hasOwn ->
        /* the scope the drainer runs inside of: opened before its wait, closed after */
        ownHalf = epoch;
        d_step { cnt[ownHalf]++; open = open | OWNBIT };
        own[ownHalf] = 1
    :: else
    fi;
    /* Drain 1: word_.load(acquire) -- the look */
    d_step {
        w0 = cnt[0]; w1 = cnt[1]; we = epoch; wf0 = flips[0]; wf1 = flips[1];
        pre = open & ~(hasOwn * OWNBIT)
    };
    lookFlips[0] = wf0;
    lookFlips[1] = wf1;
#ifdef BROKEN_ONEHALF
    clear[1 - we] = 1;
#endif
    if
    :: w0 + w1 == 0 -> goto done    /* nothing open: the inline fast path */
    :: else
    fi;
    do
    :: clear[0] = clear[0] | (w0 <= own[0]) | (wf0 != lookFlips[0]);
       clear[1] = clear[1] | (w1 <= own[1]) | (wf1 != lookFlips[1]);
       if
       :: clear[0] && clear[1] -> break
       :: else
       fi;
       cur = we;
       if
       :: !clear[cur] && ((cur == 0 && w1 <= own[1]) || (cur == 1 && w0 <= own[0])) ->
           /* DrainFrom: word_.compare_exchange_weak(word, flipped, acquire) */
           d_step {
               if
               :: cnt[0] == w0 && cnt[1] == w1 && epoch == we &&
                  flips[0] == wf0 && flips[1] == wf1 ->
#ifndef BROKEN_DIRTY
                   if
                   :: cnt[1 - we] == 0 -> flips[1 - we]++
                   :: else
                   fi;
#else
                   flips[1 - we]++;
#endif
                   epoch = 1 - we
               :: else
               fi;
               /* success or failure, the word is the one now there */
               w0 = cnt[0]; w1 = cnt[1]; we = epoch; wf0 = flips[0]; wf1 = flips[1]
           }
       :: else ->
           /* DrainFrom: word_.load(acquire) after a pause */
           d_step { w0 = cnt[0]; w1 = cnt[1]; we = epoch; wf0 = flips[0]; wf1 = flips[1] }
       fi
    od;
done:
    /* Every scope open at the look, other than our own, has ended. */
    assert((pre & open) == 0);
    returned++;
    if
    :: hasOwn -> d_step { cnt[ownHalf]--; open = open & ~OWNBIT }
    :: else
    fi
}

init
{
    atomic {
        run Scoper(0);
        run Scoper(1);
        run Drainer(1);
        run Drainer(0)
    };
    (_nr_pr == 1);
    assert(returned == 2 && cnt[0] == 0 && cnt[1] == 0 && open == 0)
}
