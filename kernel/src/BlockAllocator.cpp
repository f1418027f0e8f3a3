// The default IBlockAllocator: the global heap.

#include <TC/BlockAllocator.h>

#include <new>

namespace TC
{
namespace
{
class HeapBlockAllocator final : public IBlockAllocator
{
public:
    void* Allocate(std::size_t size, std::size_t alignment) override
    {
        return ::operator new(size, std::align_val_t(alignment));
    }
    void Free(void* block, std::size_t, std::size_t alignment) noexcept override
    {
        ::operator delete(block, std::align_val_t(alignment));
    }
};
} // namespace

IBlockAllocator& DefaultBlockAllocator() noexcept
{
    static constinit HeapBlockAllocator heap;
    return heap;
}
} // namespace TC
