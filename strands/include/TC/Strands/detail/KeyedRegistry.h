#pragma once
// KeyedRegistry: KeyedStrands' shared state: the key-to-strand map, kept strands and nodes, and
// KeyedCore, a strand that retires itself when dry.

#include <TC/Executor.h>
#include <TC/Strands/RunTask.h>
#include <TC/Strands/detail/StrandCore.h>
#include <TC/Strands/detail/WaitList.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace TC::Strands
{
template <class Key>
struct KeyedStrandsOptions;

} // namespace TC::Strands

namespace TC::detail
{
// Retired strands and map nodes kept for reuse.
inline constexpr std::size_t kKeptStrands = 32;

// The registry's lock: held for a lookup and a push, never across a wait (design notes).
using RegistryLock = StrandLock;

template <class Key, class Hash, class Equal>
class KeyedRegistry;

template <class Key, class Hash, class Equal>
class KeyedCore final : public StrandCore
{
public:
    using Registry = KeyedRegistry<Key, Hash, Equal>;

    KeyedCore(IExecutor& base, Strands::StrandOptions options, Key key,
              std::shared_ptr<Registry> registry, bool keepable)
        : StrandCore(base, std::move(options)), key_(std::move(key)),
          registry_(std::move(registry)), keepable_(keepable)
    {
        hooked_ = static_cast<bool>(registry_->options_.aroundTask);
    }

    // A retired strand forwards work to the key's current strand: a key never has two.
    EnqueueResult Enqueue(PendingEntry& pending, Admission admission) override
    {
        EnqueueResult result = StrandCore::Enqueue(pending, admission);
        if (result != EnqueueResult::Forward)
            return result;
        Key key = KeyCopy();
        return registry_->Route(key, pending, admission);
    }

    Key KeyCopy() const
    {
        std::lock_guard<detail::StrandLock> lock(Mutex());
        return key_;
    }

    // Under the registry's lock and ours.
    void ReuseLocked(const Key& key)
    {
        key_ = key;
        retired_ = false;
    }
    bool KeepableLocked() const noexcept { return keepable_; }

    // Under both locks: retires a strand a failure left dry with no pump; returns the idle
    // pump's frame, if not kept, to free outside every lock.
    std::coroutine_handle<> RetireIfStrandedLocked(Registry& registry) noexcept
    {
        if (ClosedLocked() || retired_ || !QueueEmptyLocked() || !PumpIdleLocked())
            return {}; // a pump on the base retires it, or it is gone already
        const std::coroutine_handle<> pump = PumpLocked();
        return RetireLocked(registry) == TurnEnd::Exit ? pump : std::coroutine_handle<>{};
    }

protected:
    void InvokeHook(Strands::RunTask& task) override { registry_->options_.aroundTask(key_, task); }
    bool RetiresWhenDry() const noexcept override { return true; }

    // Retires the strand when dry, under the registry's lock then the strand's (always so).
    TurnEnd OnQueueDry() override
    {
        std::shared_ptr<Registry> registry = registry_;
        std::lock_guard<RegistryLock> registryLock(registry->mutex_);
        std::lock_guard<detail::StrandLock> lock(Mutex());
        if (ClosedLocked())
            return ExitLocked();
        if (!QueueEmptyLocked())
            return TurnEnd::Continue; // work arrived while we took the locks
        return RetireLocked(*registry);
    }

    void OnStranded() noexcept override { registry_->RetireIfStranded(*this); }

private:
    // Once per strand and key: the pump's dry turn, or a failure that left no pump.
    TurnEnd RetireLocked(Registry& registry) noexcept
    {
        retired_ = true;
        registry.ReleaseKeyLocked(key_, this);
        const TurnEnd end = registry.KeepLocked(*this) ? IdleLocked() : ExitLocked();
        registry.waiters_.WakeAllLocked();
        return end;
    }

    Key key_;
    std::shared_ptr<Registry> registry_;
    bool keepable_; // false for a strand made after the seal
};

template <class Key, class Hash, class Equal>
class KeyedRegistry : public std::enable_shared_from_this<KeyedRegistry<Key, Hash, Equal>>
{
public:
    using Core = KeyedCore<Key, Hash, Equal>;
    using Map = std::unordered_map<Key, std::shared_ptr<Core>, Hash, Equal>;

    KeyedRegistry(IExecutor& base, Strands::KeyedStrandsOptions<Key> options)
        : base_(base), options_(std::move(options))
    {
        kept_.reserve(kKeptStrands);
        spareNodes_.reserve(kKeptStrands);
    }

    // Queues the entry on the key's strand, taking a kept one or making one if it has none.
    EnqueueResult Route(const Key& key, PendingEntry& pending, Admission admission)
    {
        std::unique_lock<RegistryLock> lock(mutex_);
        if (RefusesLocked(admission))
            return EnqueueResult::Refused; // the registry is the offer door
        Core* core = nullptr;
        if (auto it = active_.find(key); it != active_.end())
            core = it->second.get();
        else
            core = AttachLocked(key);
        Abandoned abandoned;
        std::unique_lock<detail::StrandLock> coreLock(core->Mutex());
        try
        {
            return core->PushLocked(pending, Admission::Return, abandoned);
        }
        catch (...)
        {
            // A pump on the base retires it at its dry turn; with no pump it retires here.
            std::shared_ptr<Core> keep =
                std::static_pointer_cast<Core>(core->shared_from_this());
            const std::coroutine_handle<> exited = core->RetireIfStrandedLocked(*this);
            coreLock.unlock();
            lock.unlock();
            if (exited)
                exited.destroy();
            keep->DropAbandoned(abandoned);
            throw;
        }
    }

    // A post's inline common case (registry lock then strand lock); else false, untouched, for
    // Route.
    template <class Fn, class Src>
    bool TryQueueInline(const Key& key, void* source, Admission admission)
    {
        std::lock_guard<RegistryLock> lock(mutex_);
        if (RefusesLocked(admission))
            return false; // Route refuses it
        auto it = active_.find(key);
        // Admission::Return, as Route's: the registry is the offer door.
        return it != active_.end() &&
               it->second->template TryQueueInline<Fn, Src>(source, Admission::Return);
    }

    // Under the registry's lock: refused if closed, or an offer once sealed; a key's strand then
    // admits every submission as a return.
    bool RefusesLocked(Admission admission) const noexcept
    {
        return closed_ || (admission == Admission::Offer && sealed_);
    }

    // With no lock held and a reference to `core`: retires it if a failure stranded it.
    void RetireIfStranded(Core& core) noexcept
    {
        std::coroutine_handle<> exited;
        {
            std::lock_guard<RegistryLock> lock(mutex_);
            std::lock_guard<detail::StrandLock> coreLock(core.Mutex());
            exited = core.RetireIfStrandedLocked(*this);
        }
        if (exited)
            exited.destroy(); // its frame's reference is not the strand's last: the caller's is
    }

    // The key's strand is retired: its map node goes to the spares.
    void ReleaseKeyLocked(const Key& key, Core* core) noexcept
    {
        auto it = active_.find(key);
        if (it == active_.end() || it->second.get() != core)
            return;
        auto node = active_.extract(it);
        node.mapped().reset(); // the pump still holds the strand
        if (spareNodes_.size() < kKeptStrands)
            spareNodes_.push_back(std::move(node)); // reserved: no allocation
    }

    // Keeps a retired strand for reuse, if there is room and it may be kept.
    bool KeepLocked(Core& core) noexcept
    {
        if (closed_ || !core.KeepableLocked() || kept_.size() >= kKeptStrands)
            return false;
        kept_.push_back(std::static_pointer_cast<Core>(core.shared_from_this())); // reserved
        return true;
    }

    void Seal()
    {
        std::lock_guard<RegistryLock> lock(mutex_);
        sealed_ = true;
    }

    void Close() noexcept
    {
        std::vector<std::shared_ptr<Core>> cores;
        {
            std::lock_guard<RegistryLock> lock(mutex_);
            closed_ = true;
            sealed_ = true;
            // The one allocation of a close; out of memory here terminates (noexcept).
            cores.reserve(active_.size() + kept_.size());
            for (auto& [key, core] : active_)
                cores.push_back(std::move(core));
            for (auto& core : kept_)
                cores.push_back(std::move(core));
            active_.clear();
            kept_.clear();
            spareNodes_.clear();
            waiters_.WakeAllLocked();
        }
        // Each close waits for a task running on another thread, never for the caller's own.
        for (auto& core : cores)
            core->Close();
    }

    bool Idle() const
    {
        std::lock_guard<RegistryLock> lock(mutex_);
        return active_.empty();
    }

    void WaitIdle()
    {
        std::unique_lock<RegistryLock> lock(mutex_);
        for (auto& [key, core] : active_)
            if (core->RunningHere())
                throw std::logic_error("TC::Strands::KeyedStrands::WaitIdle: called from a key's task");
        waiters_.WaitUntil(lock, [this] { return active_.empty() || closed_; });
    }

    bool RunningHere(const Key& key) const
    {
        std::lock_guard<RegistryLock> lock(mutex_);
        auto it = active_.find(key);
        return it != active_.end() && it->second->RunningHere();
    }

    std::size_t ActiveKeys() const
    {
        std::lock_guard<RegistryLock> lock(mutex_);
        return active_.size();
    }
    std::size_t KeptStrands() const
    {
        std::lock_guard<RegistryLock> lock(mutex_);
        return kept_.size();
    }
    std::size_t SpareNodes() const
    {
        std::lock_guard<RegistryLock> lock(mutex_);
        return spareNodes_.size();
    }
    std::size_t StrandsMade() const
    {
        std::lock_guard<RegistryLock> lock(mutex_);
        return made_;
    }

private:
    friend Core;

    Core* AttachLocked(const Key& key)
    {
        std::shared_ptr<Core> core = TakeKeptLocked(key);
        if (!core)
        {
            core = std::make_shared<Core>(base_, Strands::StrandOptions{options_.batch, {},
                                                               options_.initialCapacity},
                                          key, this->shared_from_this(), !sealed_);
            ++made_;
        }
        Core* raw = core.get();
        try
        {
            if (!spareNodes_.empty())
            {
                auto node = std::move(spareNodes_.back());
                spareNodes_.pop_back();
                node.key() = key;
                node.mapped() = std::move(core);
                auto inserted = active_.insert(std::move(node));
                if (!inserted.inserted)
                    throw std::logic_error("TC::Strands::KeyedStrands: two strands for one key");
            }
            else
            {
                active_.emplace(key, std::move(core));
            }
        }
        catch (...)
        {
            if (core && kept_.size() < kKeptStrands && !sealed_)
                kept_.push_back(std::move(core)); // a kept one goes back; reserved
            throw;
        }
        return raw;
    }

    // A kept strand goes to a key only when only the registry and its idle pump reference it
    // (exact under this lock).
    std::shared_ptr<Core> TakeKeptLocked(const Key& key)
    {
        if (sealed_)
            return {}; // no kept strand is handed out after the seal
        for (std::size_t i = 0; i < kept_.size(); ++i)
        {
            std::shared_ptr<Core>& candidate = kept_[i];
            std::lock_guard<detail::StrandLock> coreLock(candidate->Mutex());
            const long expected =
                1 + (candidate->HasPumpLocked() ? StrandCore::PumpReferences : 0);
            if (candidate.use_count() != expected)
                continue;
            candidate->ReuseLocked(key);
            std::shared_ptr<Core> taken = std::move(candidate);
            candidate = std::move(kept_.back());
            kept_.pop_back();
            return taken;
        }
        return {};
    }

    IExecutor& base_;
    Strands::KeyedStrandsOptions<Key> options_;
    mutable RegistryLock mutex_;
    Map active_;
    std::vector<std::shared_ptr<Core>> kept_;
    std::vector<typename Map::node_type> spareNodes_;
    std::size_t made_ = 0;
    bool sealed_ = false;
    bool closed_ = false;
    WaitList waiters_{"TC::Strands::KeyedStrands"}; // WaitIdle
};
} // namespace TC::detail

