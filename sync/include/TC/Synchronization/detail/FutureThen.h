#pragma once
// FutureThen: the state Then returns, which is also the continuation it attaches to the source
// future, and the traits that map the function's result (a returned Future<V> is flattened).

#include <TC/Synchronization/detail/FutureState.h>

#include <functional>
#include <future>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace TC::Synchronization
{
template <class T>
class Future;

namespace detail
{
// How Then maps f's result: a Future<V> is flattened into V.
template <class R>
struct FutureFlatten
{
    using Type = R;
    static constexpr bool kFlatten = false;
};
template <class V>
struct FutureFlatten<Future<V>>
{
    using Type = V;
    static constexpr bool kFlatten = true;
};

template <class F, class T>
struct ThenInvoke
{
    using Result = std::invoke_result_t<F, T&&>;
};
template <class F>
struct ThenInvoke<F, void>
{
    using Result = std::invoke_result_t<F>;
};

// The state Then returns, also the continuation on the source; when f returns a future it
// attaches itself again to that one (inner_ != nullptr).
template <class T, class F>
class ThenState final
    : public FutureState<typename FutureFlatten<typename ThenInvoke<F, T>::Result>::Type>,
      public FutureContinuation
{
    using Result = typename ThenInvoke<F, T>::Result;
    using U = typename FutureFlatten<Result>::Type;
    static constexpr bool kFlatten = FutureFlatten<Result>::kFlatten;

public:
    template <class G>
    ThenState(FutureState<T>* source, G&& fn) : source_(source), fn_(std::forward<G>(fn))
    {
    }

    FutureContinuation* Run() noexcept override
    {
        if constexpr (kFlatten)
        {
            if (inner_)
                return Forward();
        }
        FutureState<T>* source = source_;
        try
        {
            if (source->error_)
            {
                this->error_ = source->error_;
                source->ReleaseConsumer();
            }
            else
            {
                struct ReleaseSource
                {
                    FutureState<T>* state;
                    ~ReleaseSource() { state->ReleaseConsumer(); }
                } release{source};
                if constexpr (kFlatten)
                {
                    Future<U> next = Call(source);
                    if (!next.Valid())
                        throw std::future_error(std::future_errc::no_state);
                    inner_ = next.Detach();
                }
                else if constexpr (std::is_void_v<U>)
                {
                    Call(source);
                    this->Emplace();
                }
                else
                {
                    this->Emplace(Call(source));
                }
            }
        }
        catch (...)
        {
            this->error_ = std::current_exception();
        }
        fn_.reset();
        if constexpr (kFlatten)
        {
            if (inner_)
            {
                if (inner_->Attach(this))
                    return nullptr; // the inner producer runs us again; touch nothing more
                return Forward();
            }
        }
        return this->Publish();
    }

private:
    auto Call(FutureState<T>* source)
    {
        if constexpr (std::is_void_v<T>)
            return std::invoke(std::move(*fn_));
        else
            return std::invoke(std::move(*fn_), std::move(*source->value_));
    }

    // Second phase of a flattening Then: the inner future resolved; pass its outcome on.
    FutureContinuation* Forward() noexcept
    {
        FutureState<U>* inner = inner_;
        try
        {
            if (inner->error_)
                this->error_ = inner->error_;
            else
                this->value_ = std::move(inner->value_);
        }
        catch (...)
        {
            this->error_ = std::current_exception();
        }
        inner->ReleaseConsumer();
        return this->Publish();
    }

    FutureState<T>* source_;
    std::optional<std::decay_t<F>> fn_;
    FutureState<U>* inner_ = nullptr;
};
} // namespace detail
} // namespace TC::Synchronization
