#pragma once
// RunTask and TaskKind: what a strand's around-task hook is given -- one queued task, told
// whether it is a posted callable or a coroutine resumption, to run exactly once.

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace TC
{
// What a strand's queue entry is. An enum rather than an IsResumption() flag, because a hook
// that installs a session around a handler's resumptions may mean it for those alone.
enum class TaskKind : std::uint8_t
{
    Call,       // a callable given to Post/TryPost
    Resumption, // a coroutine given to Submit/TrySubmit (ResumeOn, a wake-up, an AsyncQueue pop)
};

namespace detail
{
// A posted callable too large (or not trivially copyable) to live in its queue entry, held by
// value in the one allocation such a post makes. The storage is
// allocated before the strand's lock and the callable moved in under it, once admission is
// decided, so a refused TryPost leaves the caller's callable untouched.
class CallBase
{
public:
    virtual void Run() = 0;
    // Destroys the callable and frees the storage.
    virtual void Destroy() noexcept = 0;

protected:
    CallBase() = default;
    CallBase(const CallBase&) = default;
    CallBase& operator=(const CallBase&) = default;
    ~CallBase() = default;
};

template <class F>
class Call final : public CallBase
{
public:
    template <class G>
    explicit Call(G&& fn) : fn_(std::forward<G>(fn))
    {
    }
    void Run() override { fn_(); }
    void Destroy() noexcept override
    {
        void* storage = this;
        this->~Call();
        ::operator delete(storage);
    }

    // Forwards the caller's callable (of reference type Src) into `storage`, sizeof(Call<F>)
    // from ::operator new: moved from an rvalue, copied from an lvalue.
    template <class Src>
    static CallBase* ConstructFrom(void* storage, void* source)
    {
        using Object = std::remove_reference_t<Src>;
        return ::new (storage) Call(std::forward<Src>(*static_cast<Object*>(source)));
    }

private:
    F fn_;
};

// Room in a queue entry for a posted callable that needs no allocation: one that is small,
// trivially copyable and trivially destructible (a lambda capturing a few pointers or
// references), so the entry can be copied as bytes when the queue grows or a batch is taken.
inline constexpr std::size_t kInlineCallSize = 3 * sizeof(void*);

template <class F>
inline constexpr bool kInlineCall = sizeof(F) <= kInlineCallSize &&
                                    alignof(F) <= alignof(void*) &&
                                    std::is_trivially_copyable_v<F> &&
                                    std::is_trivially_destructible_v<F>;

// One queue entry: a coroutine to resume (with the root to free if it is dropped), a call held
// in its own allocation, or a call held inline.
struct StrandEntry
{
    std::coroutine_handle<> handle;
    std::coroutine_handle<> abandon;
    CallBase* call = nullptr;
    void (*inlineRun)(void* fn) = nullptr; // set: the callable lives in inlineFn
    alignas(void*) unsigned char inlineFn[kInlineCallSize] = {};

    bool IsCall() const noexcept { return call != nullptr || inlineRun != nullptr; }

    // Frees what the entry owns without running it: the call, or an unowned chain's root.
    void Drop() noexcept
    {
        inlineRun = nullptr; // trivially destructible: nothing to run
        if (CallBase* owned = std::exchange(call, nullptr))
            owned->Destroy();
        if (auto root = std::exchange(abandon, nullptr))
            root.destroy();
        handle = nullptr;
    }
};

// Constructs an inline call in `entry` from the caller's callable (of reference type Src):
// copied bytes either way, since F is trivially copyable, so the source is never changed.
template <class F>
struct InlineCall
{
    static void Run(void* fn) { (*std::launder(static_cast<F*>(fn)))(); }

    template <class Src>
    static void ConstructFrom(StrandEntry& entry, void* source) noexcept
    {
        using Object = std::remove_reference_t<Src>;
        Object& from = *static_cast<Object*>(source);
        ::new (static_cast<void*>(entry.inlineFn)) F(std::forward<Src>(from));
        entry.inlineRun = &InlineCall::Run;
    }
};
} // namespace detail

// The task a hook wraps. Call it (operator()) exactly once, on the hook's thread, inside the
// hook; a task the hook does not run is dropped as a closed strand drops it. What the task throws
// comes out of operator() and, unless the hook catches it, out of the pump.
class RunTask
{
public:
    explicit RunTask(detail::StrandEntry& entry) noexcept : entry_(entry) {}
    RunTask(const RunTask&) = delete;
    RunTask& operator=(const RunTask&) = delete;

    TaskKind Kind() const noexcept
    {
        return entry_.IsCall() ? TaskKind::Call : TaskKind::Resumption;
    }
    bool HasRun() const noexcept { return ran_; }

    void operator()()
    {
        if (ran_)
            return;
        ran_ = true;
        if (entry_.inlineRun)
        {
            entry_.inlineRun(entry_.inlineFn);
        }
        else if (entry_.call)
        {
            entry_.call->Run();
        }
        else
        {
            entry_.abandon = nullptr; // resumed: nothing to free any more
            std::exchange(entry_.handle, nullptr).resume();
        }
    }

private:
    detail::StrandEntry& entry_;
    bool ran_ = false;
};
} // namespace TC
