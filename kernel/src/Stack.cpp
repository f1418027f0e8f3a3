// Stack allocation: the default allocator (anonymous mappings whose lowest pages are made
// inaccessible as the guard region, so an overflow faults at once instead of corrupting the
// neighbour), and IStackAllocator's guarded members built on an allocator's Allocate/Deallocate.

#include <TC/StackAllocator.h>

#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace TC
{
namespace
{
std::size_t PageBytes() noexcept
{
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

// Anonymous, private, not charged against the commit limit: a stack's untouched pages and its
// guard region cost address space only.
void* Map(std::size_t bytes)
{
    void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (base == MAP_FAILED)
        throw std::bad_alloc();
    return base;
}

// Makes the lowest `guardBytes` of `base` inaccessible; on failure (usually vm.max_map_count:
// the guard splits the mapping in two) unmaps the whole and throws.
void Guard(void* base, std::size_t guardBytes, std::size_t total)
{
    if (guardBytes != 0 && mprotect(base, guardBytes, PROT_NONE) != 0)
    {
        munmap(base, total);
        throw std::bad_alloc(); // use StackGuard::None, or raise vm.max_map_count, for huge counts
    }
}

class MmapStackAllocator final : public IStackAllocator
{
public:
    void* Allocate(std::size_t size, StackGuard guard) override
    {
        void* base = Map(size);
        Guard(base, guard == StackGuard::Page ? PageBytes() : 0, size);
        return base;
    }

    void Deallocate(void* base, std::size_t size, StackGuard) noexcept override { munmap(base, size); }

    void* AllocateStack(std::size_t usableBytes, std::size_t guardBytes) override
    {
        void* base = Map(guardBytes + usableBytes);
        Guard(base, guardBytes, guardBytes + usableBytes);
        return base;
    }

    void DeallocateStack(void* base, std::size_t usableBytes, std::size_t guardBytes) noexcept override
    {
        munmap(base, guardBytes + usableBytes);
    }
};
} // namespace

void* IStackAllocator::AllocateStack(std::size_t usableBytes, std::size_t guardBytes)
{
    const std::size_t total = guardBytes + usableBytes;
    void* base = Allocate(total, guardBytes != 0 ? StackGuard::Page : StackGuard::None);
    const std::size_t page = PageBytes();
    if (guardBytes > page
        && mprotect(static_cast<unsigned char*>(base) + page, guardBytes - page, PROT_NONE) != 0)
    {
        Deallocate(base, total, StackGuard::Page);
        throw std::bad_alloc();
    }
    return base;
}

void IStackAllocator::DeallocateStack(void* base, std::size_t usableBytes, std::size_t guardBytes) noexcept
{
    const std::size_t page = PageBytes();
    if (guardBytes > page)
        mprotect(static_cast<unsigned char*>(base) + page, guardBytes - page, PROT_READ | PROT_WRITE);
    Deallocate(base, guardBytes + usableBytes, guardBytes != 0 ? StackGuard::Page : StackGuard::None);
}

IStackAllocator& DefaultStackAllocator() noexcept
{
    static MmapStackAllocator allocator;
    return allocator;
}
} // namespace TC
