// Which daemons hold a current copy of each byte of a memory object. The object's bytes are cut
// into segments, each with the mask of the daemons current there; neighbours of one mask merge, so
// a buffer that one daemon wrote whole is one segment, and a grid split over three daemons is three.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace fedcl {

using ConnectionMask = uint64_t;

class ValidityMap {
 public:
  struct Segment {
    size_t begin, end;
    ConnectionMask holders;
  };

  // size bytes, current on holders (0: nowhere yet, as a buffer created without contents).
  void reset(size_t size, ConnectionMask holders);
  size_t size() const { return size_; }

  // [begin, end) is current on holders alone (a write there).
  void assign(size_t begin, size_t end, ConnectionMask holders);
  // [begin, end) is current on holders too (a copy arrived, or is on its way, there).
  void add(size_t begin, size_t end, ConnectionMask holders);
  // holder is current nowhere that another holder is current too: the copies it got may not have
  // arrived. What holder alone has stays.
  void drop_where_shared(ConnectionMask holder);

  // The segments that cover [begin, end), cut at its ends.
  std::vector<Segment> segments(size_t begin, size_t end) const;

 private:
  // Makes a segment start at offset (below size_), splitting the one that holds it.
  void split_at(size_t offset);
  // Merges segments of one mask that start in [from, to] with their left neighbours.
  void merge(size_t from, size_t to);

  size_t size_ = 0;
  std::map<size_t, ConnectionMask> starts_;  // segment start -> holders; a segment ends where the next starts
};

}  // namespace fedcl
