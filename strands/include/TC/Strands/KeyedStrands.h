#pragma once
// KeyedStrands: one strand per key (a model, a connection, a user); a key with no work has no
// strand.
//   TC::Strands::KeyedStrands<UserId> users(scheduler);
//   users.Post(id, [&] { Touch(state[id]); }); // one task at a time per user

#include <TC/Executor.h>
#include <TC/Strands/ResumeTarget.h>
#include <TC/Strands/RunTask.h>
#include <TC/Strands/Strand.h>
#include <TC/Strands/detail/KeyedRegistry.h>
#include <TC/Strands/detail/ParkedWorkFor.h>
#include <TC/Strands/detail/StrandCore.h>

#include <coroutine>
#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace TC::Strands
{
template <class Key>
struct KeyedStrandsOptions
{
    std::size_t batch = 64;          // as StrandOptions::batch, per key
    std::size_t initialCapacity = 16; // as StrandOptions::initialCapacity, per key
    // Around every task, told the key; must call task() once.
    std::function<void(const Key& key, RunTask& task)> aroundTask;
};


// Each key's work runs one task at a time, in order, on the base; keys run in parallel.
/// - A key's strand is made (or a kept one reused) when work arrives and retired when its queue
///   runs dry; up to 32 retired strands and map nodes are kept.
/// - Any thread. Seal() refuses TryPost/TrySubmit; Post/Submit admitted until Close().
///   ~KeyedStrands is Close(): queues dropped, running tasks waited for but the one it runs
///   inside (as Strand). The base must outlive it.
/// - What Post/Submit throw reaches the caller; the key's strand then retires as a dry one.
template <class Key, class Hash = std::hash<Key>, class Equal = std::equal_to<Key>>
class KeyedStrands
{
public:
    using Registry = detail::KeyedRegistry<Key, Hash, Equal>;

    explicit KeyedStrands(IExecutor& base, KeyedStrandsOptions<Key> options = {})
        : registry_(std::make_shared<Registry>(base, std::move(options)))
    {
    }
    ~KeyedStrands() { registry_->Close(); }
    KeyedStrands(const KeyedStrands&) = delete;
    KeyedStrands& operator=(const KeyedStrands&) = delete;

    template <class F>
    void Post(const Key& key, F&& fn)
    {
        PostImpl(key, std::forward<F>(fn), detail::Admission::Return);
    }
    // Refused once sealed or closed: false, `fn` untouched.
    template <class F>
    bool TryPost(const Key& key, F&& fn)
    {
        return PostImpl(key, std::forward<F>(fn), detail::Admission::Offer);
    }

    void Submit(const Key& key, std::coroutine_handle<> handle)
    {
        Submit(key, ParkedWork{handle, {}});
    }
    // Dropped (an unowned chain freed) once closed.
    void Submit(const Key& key, ParkedWork work)
    {
        detail::PendingEntry pending{detail::StrandEntry::Resumption(work.handle, work.abandon)};
        if (registry_->Route(key, pending, detail::Admission::Return) !=
            detail::EnqueueResult::Queued)
            work.Abandon();
    }
    // Refused once sealed or closed: false, the work left with the caller.
    bool TrySubmit(const Key& key, ParkedWork work)
    {
        detail::PendingEntry pending{detail::StrandEntry::Resumption(work.handle, work.abandon)};
        return registry_->Route(key, pending, detail::Admission::Offer) ==
               detail::EnqueueResult::Queued;
    }

    class ResumeOnAwaiter
    {
    public:
        ResumeOnAwaiter(KeyedStrands& strands, Key key) : strands_(strands), key_(std::move(key)) {}
        bool await_ready() const noexcept { return false; }
        template <class Promise>
        void await_suspend(std::coroutine_handle<Promise> awaiting)
        {
            strands_.Submit(key_, detail::ParkedWorkFor(awaiting));
        }
        void await_resume() const noexcept {}

    private:
        KeyedStrands& strands_;
        Key key_;
    };

    // co_await strands.ResumeOn(key): continue on the key's strand.
    [[nodiscard("co_await it")]] ResumeOnAwaiter ResumeOn(Key key)
    {
        return ResumeOnAwaiter(*this, std::move(key));
    }

    void Seal() { registry_->Seal(); }
    void Close() noexcept { registry_->Close(); }
    // True when no key has a strand (every queue ran dry).
    bool Idle() const { return registry_->Idle(); }
    // Blocks until Idle(), as Strand::WaitIdle.
    void WaitIdle() { registry_->WaitIdle(); }
    bool RunningHere(const Key& key) const { return registry_->RunningHere(key); }

    // Keys with a strand, kept strands, spare map nodes, strands made.
    std::size_t ActiveKeys() const { return registry_->ActiveKeys(); }
    std::size_t KeptStrands() const { return registry_->KeptStrands(); }
    std::size_t SpareNodes() const { return registry_->SpareNodes(); }
    std::size_t StrandsMade() const { return registry_->StrandsMade(); }

private:
    template <class F>
    bool PostImpl(const Key& key, F&& fn, detail::Admission admission)
    {
        using Fn = std::decay_t<F>;
        if constexpr (detail::kInlineCall<Fn>)
        {
            // As Strand's post.
            if (registry_->template TryQueueInline<Fn, F&&>(key, detail::CallableSource(fn),
                                                            admission))
                return true;
        }
        return detail::PostWith(std::forward<F>(fn), [&](detail::PendingEntry& pending) {
            return registry_->Route(key, pending, admission);
        });
    }

    std::shared_ptr<Registry> registry_;
};
} // namespace TC::Strands
