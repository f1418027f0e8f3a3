#pragma once
// SpinLock: the kernel's one-word lock (TC/detail/SpinLock.h), under this layer's detail names.

#include <TC/detail/SpinLock.h>

namespace TC::Synchronization::detail
{
using TC::detail::CpuRelax;
using TC::detail::SpinLock;
using TC::detail::SpinPause;
} // namespace TC::Synchronization::detail
