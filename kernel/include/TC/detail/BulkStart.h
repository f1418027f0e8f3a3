#pragma once
// What StartBulk stores in each task's block: a copy of the body and the index.

#include <cstddef>
#include <new>

namespace TC::detail
{
// Constructs task `index`'s callable at `slot` from the body at `body`.
using BulkConstruct = void (*)(void* slot, const void* body, std::size_t index);

template <class F>
struct IndexedCall
{
    F body;
    std::size_t index;
    void operator()() { body(index); }
};

template <class F>
struct IndexedCallFor
{
    static void Construct(void* slot, const void* body, std::size_t index)
    {
        ::new (slot) IndexedCall<F>{*static_cast<const F*>(body), index};
    }
};
} // namespace TC::detail
