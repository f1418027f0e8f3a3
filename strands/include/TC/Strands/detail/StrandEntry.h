#pragma once
// A strand queue's entry (StrandEntry, 32 bytes) and the posted calls it holds, inline or in
// their own allocation. Users include <TC/Strands/RunTask.h> or <TC/Strands/Strand.h>.

#include <TC/detail/Export.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace TC::detail
{
// A posted callable too big for its entry, in the post's one allocation; moved in once
// admitted.
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

    // Forwards the callable (reference type Src) into `storage` from ::operator new.
    template <class Src>
    static CallBase* ConstructFrom(void* storage, void* source)
    {
        using Object = std::remove_reference_t<Src>;
        return ::new (storage) Call(std::forward<Src>(*static_cast<Object*>(source)));
    }

private:
    F fn_;
};

// Fits in an entry: small, trivially copyable and destructible.
inline constexpr std::size_t kInlineCallSize = 3 * sizeof(void*);

template <class F>
inline constexpr bool kInlineCall = sizeof(F) <= kInlineCallSize &&
                                    alignof(F) <= alignof(void*) &&
                                    std::is_trivially_copyable_v<F> &&
                                    std::is_trivially_destructible_v<F>;

// One queue entry, 32 bytes aligned to 32. `run` says what the words hold:
//   nullptr          a coroutine: words[0..7] its handle, words[8..15] the root to free if it is
//                    dropped (or nothing at all: a default entry)
//   &RunHeldCall     a call in its own allocation: words[0..7] its CallBase*
//   anything else    a call held inline: the callable's bytes, `run` its invoker
struct TC_API alignas(32) StrandEntry
{
    void (*run)(void* words) = nullptr;
    alignas(void*) unsigned char words[kInlineCallSize] = {};

    static StrandEntry Resumption(std::coroutine_handle<> handle,
                                  std::coroutine_handle<> abandon) noexcept
    {
        StrandEntry entry;
        entry.StoreWord(0, handle.address());
        entry.StoreWord(1, abandon.address());
        return entry;
    }
    void SetHeldCall(CallBase* call) noexcept
    {
        StoreWord(0, call);
        run = &RunHeldCall;
    }

    bool IsCall() const noexcept { return run != nullptr; }
    std::coroutine_handle<> Handle() const noexcept
    {
        return std::coroutine_handle<>::from_address(LoadWord(0));
    }

    // Frees what it owns without running it: the call, or an unowned chain's root.
    void Drop() noexcept
    {
        if (run == &RunHeldCall)
            HeldCall()->Destroy();
        else if (run == nullptr)
        {
            if (void* root = LoadWord(1))
                std::coroutine_handle<>::from_address(root).destroy();
        }
        run = nullptr; // an inline call is trivially destructible: nothing to do
        StoreWord(1, nullptr);
    }
    // After its coroutine was resumed: nothing left to free.
    void Resumed() noexcept { StoreWord(1, nullptr); }

private:
    static void RunHeldCall(void* words) { (*static_cast<CallBase**>(words))->Run(); }
    CallBase* HeldCall() const noexcept { return static_cast<CallBase*>(LoadWord(0)); }
    // Pointers held as bytes: memcpy.
    void* LoadWord(std::size_t index) const noexcept
    {
        void* word;
        std::memcpy(&word, words + index * sizeof(void*), sizeof word);
        return word;
    }
    void StoreWord(std::size_t index, void* word) noexcept
    {
        std::memcpy(words + index * sizeof(void*), &word, sizeof word);
    }
};
static_assert(sizeof(StrandEntry) == 32);

// Constructs an inline call in `entry` (bytes copied; the source unchanged).
template <class F>
struct InlineCall
{
    static void Run(void* fn) { (*std::launder(static_cast<F*>(fn)))(); }

    template <class Src>
    static void ConstructFrom(StrandEntry& entry, void* source) noexcept
    {
        using Object = std::remove_reference_t<Src>;
        Object& from = *static_cast<Object*>(source);
        ::new (static_cast<void*>(entry.words)) F(std::forward<Src>(from));
        entry.run = &InlineCall::Run;
    }
};
} // namespace TC::detail
