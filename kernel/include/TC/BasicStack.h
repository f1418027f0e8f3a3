#pragma once
// BasicStack<T>: an intrusive LIFO for one thread (or under the caller's lock).

#include <cstddef>

namespace TC
{
// Chains nodes through `T* next` without allocating. A node is in the stack from Push until
// popped; the stack never frees one.
template <class T>
class BasicStack
{
public:
    BasicStack() noexcept = default;
    BasicStack(const BasicStack&) = delete;
    BasicStack& operator=(const BasicStack&) = delete;
    BasicStack(BasicStack&& other) noexcept : top_(other.top_) { other.top_ = nullptr; }

    void Push(T* node) noexcept
    {
        node->next = top_;
        top_ = node;
    }

    // The most recently pushed node, or nullptr.
    T* Pop() noexcept
    {
        T* node = top_;
        if (node)
            top_ = node->next;
        return node;
    }

    // Detaches every node; the result is linked newest first through `next`.
    T* PopAll() noexcept
    {
        T* all = top_;
        top_ = nullptr;
        return all;
    }

    // Reverses the order: Pop returns the oldest first.
    void Reverse() noexcept
    {
        T* reversed = nullptr;
        while (T* node = Pop())
        {
            node->next = reversed;
            reversed = node;
        }
        top_ = reversed;
    }

    bool IsEmpty() const noexcept { return top_ == nullptr; }
    T* Top() const noexcept { return top_; }

private:
    T* top_ = nullptr;
};
} // namespace TC
