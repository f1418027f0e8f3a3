// The default stack allocator: anonymous mappings, with the lowest page made inaccessible when a
// guard is asked for, so an overflow faults at once instead of corrupting the neighbour.

#include <TC/StackAllocator.h>

#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace TC
{
namespace
{
class MmapStackAllocator final : public IStackAllocator
{
public:
    void* Allocate(std::size_t size, StackGuard guard) override
    {
        void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);
        if (base == MAP_FAILED)
            throw std::bad_alloc();
        if (guard == StackGuard::Page
            && mprotect(base, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), PROT_NONE) != 0)
        {
            munmap(base, size);
            throw std::bad_alloc(); // usually vm.max_map_count: use StackGuard::None for huge counts
        }
        return base;
    }

    void Deallocate(void* base, std::size_t size, StackGuard) noexcept override { munmap(base, size); }
};
} // namespace

IStackAllocator& DefaultStackAllocator() noexcept
{
    static MmapStackAllocator allocator;
    return allocator;
}
} // namespace TC
