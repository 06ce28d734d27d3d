// The files load_opg maps to read weights in place, and the release of their
// pages from resident memory once a weight's bytes are no longer read there.
//
// A kernel that packs a weight (for MKL, for the one-row product, into a
// oneDNN layout) reads it once and then only reads its packed copy: the
// weight's pages of the mapping stay resident, a second copy of the model,
// unless they are released. A released page of a private file mapping that
// still holds the file's bytes faults back in from the page cache if it is
// read again, so releasing one is always safe; a page written to (copied on
// write) would lose what was written, and stays.
#pragma once

#include <cstddef>

namespace opgraph {

// [begin, begin + bytes) is a private mapping of a file whose unwritten
// pages may be released; forget_file_mapping(begin) before it is unmapped.
void note_file_mapping(const void* begin, size_t bytes);
void forget_file_mapping(const void* begin);

// Releases the resident pages that lie wholly inside [data, data + bytes)
// and inside a noted mapping, and still hold the file's bytes. Anywhere
// else it does nothing. Returns the bytes released.
size_t release_file_pages(const void* data, size_t bytes);

}  // namespace opgraph
