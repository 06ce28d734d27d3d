// libFuzzer target for the .opg loader: any byte string, loaded as an .opg
// file and made into a Session, either works or throws opgraph::Error.
// Anything else (a crash, a sanitizer report, another exception type, a
// leak) is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "opgraph/opgraph.h"

namespace {

// An in-memory file holding `size` bytes, closed when it goes out of scope:
// the loader maps it through /proc/self/fd as it would a file on disk.
class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size) : fd_(::memfd_create("opg_loader_fuzzer", MFD_CLOEXEC)) {
    if (fd_ < 0) __builtin_trap();
    for (size_t written = 0; written < size;) {
      const ssize_t n = ::write(fd_, data + written, size - written);
      if (n <= 0) __builtin_trap();
      written += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const MemoryFile file(data, size);
  try {
    opgraph::OpgFile opg = opgraph::load_opg(file.path());
    // Loading an op package runs its code: a graph that names packages is
    // checked up to here. Session(path) does exactly this for the rest.
    if (!opg.graph.packages.empty()) return 0;
    const opgraph::Session session(std::move(opg.graph), std::move(opg.weights));
  } catch (const opgraph::Error&) {
    // A bad file, reported as one: what the loader promises.
  }
  return 0;
}
