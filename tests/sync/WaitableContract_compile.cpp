// Compiled by the sync.compile.* tests, never linked: a T that breaks the contract of Waitable
// or Suspendable must fail to compile with a message naming what T must provide. Each test
// defines one TC_BREAK_* macro; with none defined, the file holds only correct Ts and compiles.

#include <TC/Synchronization/Suspendable.h>
#include <TC/Synchronization/Waitable.h>

#include <atomic>

using namespace TC::Synchronization;

// Correct: public TryWait and Resume.
class PublicGate : public Waitable<SuspensionKind::Multiple, PublicGate>
{
public:
    bool TryWait() noexcept { return open_.load(); }
    void Resume() noexcept { SuspendableBase<SuspensionKind::Multiple>::Resume(); }

private:
    std::atomic<bool> open_{false};
};

// Correct: a private Resume that Waitable reaches as a friend (as AutoResetEvent's).
class FriendGate : public Waitable<SuspensionKind::Single, FriendGate>
{
public:
    bool TryWait() noexcept { return open_.load(); }

private:
    friend class Waitable<SuspensionKind::Single, FriendGate>;
    void Resume() noexcept { SuspendableBase<SuspensionKind::Single>::Resume(); }
    std::atomic<bool> open_{false};
};

// Correct: Suspendable with its re-check.
class Flag : public Suspendable<SuspensionKind::Single, Flag>
{
public:
    void TryResume() noexcept {}
};

#if defined(TC_BREAK_NO_RESUME)
// Forgets its Resume: the base class's protected Resume would be called in its place.
class NoResume : public Waitable<SuspensionKind::Multiple, NoResume>
{
public:
    bool TryWait() noexcept { return true; }
};
#elif defined(TC_BREAK_PRIVATE_RESUME)
// Its Resume is private and Waitable is no friend.
class PrivateResume : public Waitable<SuspensionKind::Multiple, PrivateResume>
{
public:
    bool TryWait() noexcept { return true; }

private:
    void Resume() noexcept {}
};
#elif defined(TC_BREAK_NO_TRY_WAIT)
class NoTryWait : public Waitable<SuspensionKind::Multiple, NoTryWait>
{
public:
    void Resume() noexcept {}
};
#elif defined(TC_BREAK_NO_TRY_RESUME)
class NoTryResume : public Suspendable<SuspensionKind::Single, NoTryResume>
{
};
#endif

// Constructing each one instantiates the constructor that holds the checks.
void Instantiate()
{
    PublicGate publicGate;
    FriendGate friendGate;
    Flag flag;
#if defined(TC_BREAK_NO_RESUME)
    NoResume broken;
#elif defined(TC_BREAK_PRIVATE_RESUME)
    PrivateResume broken;
#elif defined(TC_BREAK_NO_TRY_WAIT)
    NoTryWait broken;
#elif defined(TC_BREAK_NO_TRY_RESUME)
    NoTryResume broken;
#endif
}
