// operator new/delete for tc_fuzz_regression_tests: freed memory is overwritten with 0xdd, so
// a use after free reads garbage pointers and crashes without a sanitizer. A file of its own so
// that the compiler cannot inline the pair into the code that uses it; every form is replaced,
// so each allocation and its release go through the same malloc/free.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>

namespace
{
void* Allocate(std::size_t size, std::size_t alignment) noexcept
{
    void* p = nullptr;
    if (alignment <= alignof(std::max_align_t))
        p = std::malloc(size ? size : 1);
    else if (posix_memalign(&p, alignment, size ? size : 1) != 0)
        p = nullptr;
    return p;
}

void* AllocateOrThrow(std::size_t size, std::size_t alignment)
{
    if (void* p = Allocate(size, alignment))
        return p;
    throw std::bad_alloc();
}

void Release(void* p) noexcept
{
    if (p)
        std::memset(p, 0xdd, malloc_usable_size(p));
    std::free(p);
}
} // namespace

void* operator new(std::size_t size)
{
    return AllocateOrThrow(size, 0);
}
void* operator new[](std::size_t size)
{
    return AllocateOrThrow(size, 0);
}
void* operator new(std::size_t size, std::align_val_t al)
{
    return AllocateOrThrow(size, static_cast<std::size_t>(al));
}
void* operator new[](std::size_t size, std::align_val_t al)
{
    return AllocateOrThrow(size, static_cast<std::size_t>(al));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    return Allocate(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    return Allocate(size, 0);
}
void* operator new(std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept
{
    return Allocate(size, static_cast<std::size_t>(al));
}
void* operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept
{
    return Allocate(size, static_cast<std::size_t>(al));
}
void operator delete(void* p) noexcept
{
    Release(p);
}
void operator delete[](void* p) noexcept
{
    Release(p);
}
void operator delete(void* p, std::size_t) noexcept
{
    Release(p);
}
void operator delete[](void* p, std::size_t) noexcept
{
    Release(p);
}
void operator delete(void* p, std::align_val_t) noexcept
{
    Release(p);
}
void operator delete[](void* p, std::align_val_t) noexcept
{
    Release(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept
{
    Release(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept
{
    Release(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept
{
    Release(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept
{
    Release(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept
{
    Release(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept
{
    Release(p);
}
