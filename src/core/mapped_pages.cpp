#include "core/mapped_pages.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace opgraph {
namespace {

struct Mappings {
  std::mutex mutex;
  std::map<uintptr_t, uintptr_t> ends;  // a mapping's first byte -> its end
};

Mappings& mappings() {
  static Mappings all;
  return all;
}

#if defined(__linux__)
// /proc/self/pagemap holds a word per virtual page (Documentation/admin-guide/mm/pagemap.rst).
constexpr uint64_t kPresent = uint64_t{1} << 63;
// Set for a page of the page cache; clear for an anonymous one, which is
// what a private file mapping's page becomes when it is written to.
constexpr uint64_t kFilePage = uint64_t{1} << 61;
constexpr size_t kWordsPerRead = 512;

// Releases the present page-cache pages among [first, last) (page numbers).
size_t release_unwritten(uintptr_t first, uintptr_t last, uintptr_t page) {
  const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) return 0;  // without it, written pages cannot be told apart: keep them all
  size_t released = 0;
  uintptr_t run = last;  // the first page of the current run of releasable pages
  const auto end_run = [&](uintptr_t stop) {
    if (run < stop && ::madvise(reinterpret_cast<void*>(run * page), (stop - run) * page, MADV_DONTNEED) == 0) {
      released += (stop - run) * page;
    }
    run = last;
  };
  uint64_t words[kWordsPerRead];
  uintptr_t at = first;
  while (at < last) {
    const size_t count = std::min<uintptr_t>(kWordsPerRead, last - at);
    const ssize_t read = ::pread(pagemap, words, count * sizeof(uint64_t), static_cast<off_t>(at * sizeof(uint64_t)));
    if (read <= 0) break;
    for (size_t i = 0; i < static_cast<size_t>(read) / sizeof(uint64_t); ++i, ++at) {
      const bool releasable = (words[i] & kPresent) != 0 && (words[i] & kFilePage) != 0;
      if (releasable && run == last) run = at;
      if (!releasable) end_run(at);
    }
  }
  end_run(at);
  ::close(pagemap);
  return released;
}
#endif

}  // namespace

void note_file_mapping(const void* begin, size_t bytes) {
  const auto start = reinterpret_cast<uintptr_t>(begin);
  std::lock_guard lock(mappings().mutex);
  mappings().ends[start] = start + bytes;
}

void forget_file_mapping(const void* begin) {
  std::lock_guard lock(mappings().mutex);
  mappings().ends.erase(reinterpret_cast<uintptr_t>(begin));
}

size_t release_file_pages(const void* data, size_t bytes) {
#if defined(__linux__)
  const auto begin = reinterpret_cast<uintptr_t>(data);
  // Under the lock: a mapping is not unmapped while its pages are released.
  std::lock_guard lock(mappings().mutex);
  auto mapping = mappings().ends.upper_bound(begin);
  if (mapping == mappings().ends.begin()) return 0;
  --mapping;
  const uintptr_t end = std::min(begin + bytes, mapping->second);
  if (begin >= end) return 0;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Only whole pages: the rest of a page at either end may hold another tensor.
  const uintptr_t first = (begin + page - 1) / page, last = end / page;
  return first < last ? release_unwritten(first, last, page) : 0;
#else
  (void)data;
  (void)bytes;
  return 0;
#endif
}

}  // namespace opgraph
