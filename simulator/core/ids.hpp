#pragma once

#include <compare>
#include <cstddef>
#include <vector>

namespace prismsim {

/// An index into one kind of table, typed so that ids of different tables cannot be mixed and
/// index their own table without casts.
template <typename Tag>
class Id {
 public:
  constexpr Id() = default;
  constexpr explicit Id(int value) : value_(value) {}
  constexpr explicit Id(size_t value) : value_(static_cast<int>(value)) {}
  constexpr int value() const { return value_; }
  constexpr size_t index() const { return static_cast<size_t>(value_); }
  constexpr auto operator<=>(const Id&) const = default;

 private:
  int value_ = 0;
};

/// A vector indexed by one kind of id.
template <typename IdT, typename T>
class IdVector : public std::vector<T> {
 public:
  using std::vector<T>::vector;
  T& operator[](IdT id) { return std::vector<T>::operator[](id.index()); }
  const T& operator[](IdT id) const { return std::vector<T>::operator[](id.index()); }
  /// The id the next element pushed back will have.
  IdT next_id() const { return IdT(this->size()); }
};

}  // namespace prismsim
