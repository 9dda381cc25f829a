#include "validity_map.h"

#include <algorithm>

namespace fedcl {

void ValidityMap::reset(size_t size, ConnectionMask holders) {
  size_ = size;
  starts_.clear();
  if (size) starts_[0] = holders;
}

void ValidityMap::split_at(size_t offset) {
  if (offset >= size_) return;
  auto next = starts_.upper_bound(offset);
  auto holding = std::prev(next);
  if (holding->first != offset) starts_.emplace_hint(next, offset, holding->second);
}

void ValidityMap::merge(size_t from, size_t to) {
  auto it = starts_.lower_bound(from);
  if (it == starts_.begin()) ++it;
  while (it != starts_.end() && it->first <= to) {
    if (std::prev(it)->second == it->second)
      it = starts_.erase(it);
    else
      ++it;
  }
}

void ValidityMap::assign(size_t begin, size_t end, ConnectionMask holders) {
  end = std::min(end, size_);
  if (begin >= end) return;
  split_at(begin);
  split_at(end);
  starts_.erase(starts_.upper_bound(begin), starts_.lower_bound(end));
  starts_[begin] = holders;
  merge(begin, end);
}

void ValidityMap::add(size_t begin, size_t end, ConnectionMask holders) {
  end = std::min(end, size_);
  if (begin >= end) return;
  split_at(begin);
  split_at(end);
  for (auto it = starts_.find(begin); it != starts_.end() && it->first < end; ++it) it->second |= holders;
  merge(begin, end);
}

void ValidityMap::drop_where_shared(ConnectionMask holder) {
  for (auto &[start, holders] : starts_)
    if ((holders & holder) && (holders & ~holder)) holders &= ~holder;
  merge(0, size_);
}

std::vector<ValidityMap::Segment> ValidityMap::segments(size_t begin, size_t end) const {
  std::vector<Segment> out;
  end = std::min(end, size_);
  if (begin >= end) return out;
  auto it = std::prev(starts_.upper_bound(begin));
  for (; it != starts_.end() && it->first < end; ++it) {
    auto next = std::next(it);
    size_t segment_end = next == starts_.end() ? size_ : next->first;
    out.push_back({std::max(begin, it->first), std::min(end, segment_end), it->second});
  }
  return out;
}

}  // namespace fedcl
