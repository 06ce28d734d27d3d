// The release of a loaded file's pages once a weight is packed
// (core/mapped_pages.h): only whole pages of a noted mapping that still hold
// the file's bytes leave resident memory, and a Session that packed its
// weights computes the same after as before, also where a node reads a
// released weight in place.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/mapped_pages.h"
#include "graphs.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "opgraph/opgraph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::random_tensor;
using testing::temp_path;

bool pagemap_readable() { return ::access("/proc/self/pagemap", R_OK) == 0; }

// The bytes of `path` resident in this process' mappings of it.
size_t resident_bytes_of(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  const std::string name = std::filesystem::canonical(path).string();
  size_t kilobytes = 0;
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "Rss:") {
      size_t value = 0;
      words >> value;
      if (inside) kilobytes += value;
    } else if (first.find('-') != std::string::npos && first.back() != ':') {
      inside = line.size() >= name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0;
    }
  }
  return kilobytes * 1024;
}

class FilePages : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pagemap_readable()) GTEST_SKIP() << "/proc/self/pagemap is not readable";
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<char> bytes(kPages * page_);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + i / page_);
    std::ofstream(path_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file_bytes_ = std::move(bytes);
    const int fd = ::open(path_.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    void* data = ::mmap(nullptr, file_bytes_.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    ::close(fd);
    ASSERT_NE(data, MAP_FAILED);
    data_ = static_cast<char*>(data);
    note_file_mapping(data_, file_bytes_.size());
  }
  void TearDown() override {
    if (data_ != nullptr) {
      forget_file_mapping(data_);
      ::munmap(data_, file_bytes_.size());
    }
    std::filesystem::remove(path_);
  }
  // Reads every page of the mapping, so that all are resident.
  void touch() const {
    for (size_t at = 0; at < file_bytes_.size(); at += page_)
      static_cast<void>(*static_cast<volatile char*>(data_ + at));
  }

  static constexpr size_t kPages = 16;
  std::string path_ = temp_path("pages.bin");
  std::vector<char> file_bytes_;
  char* data_ = nullptr;
  size_t page_ = 0;
};

TEST_F(FilePages, WholeUnwrittenPagesInsideTheRangeAreReleasedAndReadBackTheFile) {
  touch();
  data_[5 * page_ + 3] = 'w';  // copied on write: its page must stay
  // From 100 bytes into page 0 to 100 bytes into page 15: pages 1 to 14, but 5.
  const size_t released = release_file_pages(data_ + 100, 15 * page_);
  EXPECT_EQ(released, 13 * page_);
  EXPECT_EQ(data_[5 * page_ + 3], 'w');
  file_bytes_[5 * page_ + 3] = 'w';
  EXPECT_EQ(std::memcmp(data_, file_bytes_.data(), file_bytes_.size()), 0);
  // Read again, the pages are resident again, and can be released again.
  touch();
  EXPECT_EQ(release_file_pages(data_, file_bytes_.size()), 15 * page_);
  EXPECT_EQ(std::memcmp(data_, file_bytes_.data(), file_bytes_.size()), 0);
}

TEST_F(FilePages, PagesNotResidentAndRangesWithinOnePageAreLeft) {
  EXPECT_EQ(release_file_pages(data_, file_bytes_.size()), 0u);  // never read: nothing resident
  touch();
  EXPECT_EQ(release_file_pages(data_ + 1, page_ - 1), 0u);
  EXPECT_EQ(release_file_pages(data_ + page_ / 2, page_), 0u);  // across two pages, neither whole
  EXPECT_EQ(release_file_pages(data_, 0), 0u);
  // A range that runs past the mapping: only the mapping's pages.
  EXPECT_EQ(release_file_pages(data_ + (kPages - 1) * page_, 4 * page_), page_);
}

TEST_F(FilePages, MemoryOutsideANotedMappingIsLeft) {
  std::vector<char> heap(4 * page_, 'h');
  EXPECT_EQ(release_file_pages(heap.data(), heap.size()), 0u);
  EXPECT_EQ(heap[page_ * 2], 'h');
  touch();
  forget_file_mapping(data_);
  EXPECT_EQ(release_file_pages(data_, file_bytes_.size()), 0u);
  note_file_mapping(data_, file_bytes_.size());
}

TEST(SpannedBytes, FromTheFirstElementToTheLast) {
  float values[64];
  const auto* base = reinterpret_cast<const std::byte*>(values);
  const std::vector<int64_t> shape{4, 8};
  auto span = kernels::spanned_bytes(values, shape, std::vector<int64_t>{8, 1}, sizeof(float));
  EXPECT_EQ(span.data(), base);
  EXPECT_EQ(span.size(), 32 * sizeof(float));
  span = kernels::spanned_bytes(values, shape, std::vector<int64_t>{1, 4}, sizeof(float));  // a transposed view
  EXPECT_EQ(span.size(), 32 * sizeof(float));
  span = kernels::spanned_bytes(values, shape, std::vector<int64_t>{16, 1}, sizeof(float));  // every other row
  EXPECT_EQ(span.size(), (3 * 16 + 8) * sizeof(float));
  span = kernels::spanned_bytes(values + 63, std::vector<int64_t>{64}, std::vector<int64_t>{-1}, sizeof(float));
  EXPECT_EQ(span.data(), base);
  EXPECT_EQ(span.size(), 64 * sizeof(float));
  EXPECT_TRUE(kernels::spanned_bytes(values, std::vector<int64_t>{0, 8}, std::vector<int64_t>{8, 1}, 4).empty());
}

// y = x @ w^T + b, and with `read_in_place` also r = relu(w), which reads w
// itself after the product has packed it.
Graph linear_graph(bool read_in_place) {
  return Graph::from_json(std::string(R"({
    "name": "linear",
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 256]}],
    "outputs": [{"name": "y"})") +
                          (read_in_place ? R"(, {"name": "r"})" : "") + R"(],
    "constants": [{"name": "w", "dtype": "float32", "shape": [1024, 256]},
                  {"name": "b", "dtype": "float32", "shape": [1024]}],
    "nodes": [
      {"name": "fc", "op_type": "aten::linear", "inputs": ["x", "w", "b"], "outputs": ["y"]})" +
                          (read_in_place ? R"(,
      {"name": "relu", "op_type": "aten::relu", "inputs": ["w"], "outputs": ["r"]})"
                                         : "") +
                          "]}");
}

class ReleasedWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pagemap_readable()) GTEST_SKIP() << "/proc/self/pagemap is not readable";
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // The outputs of `session` for x of `rows` rows.
  static std::vector<Tensor> outputs(const Session& session, int64_t rows) {
    return session.run({{"x", random_tensor({rows, 256}, static_cast<uint32_t>(rows))}});
  }

  std::string path_ = temp_path("released.opg");
  Weights weights_{{"w", random_tensor({1024, 256}, 1)}, {"b", random_tensor({1024}, 2)}};
};

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& expected, int64_t rows) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), expected[i].shape());
    EXPECT_EQ(std::memcmp(got[i].data(), expected[i].data(), got[i].nbytes()), 0)
        << "output " << i << ", " << rows << " rows";
  }
}

// One row (the one-row product's panels), 8 (oneDNN's layout) and 128 (MKL's
// packed format, where MKL is built): each packs w and releases its pages.
constexpr int64_t kRowCounts[] = {1, 8, 128};

TEST_F(ReleasedWeights, PackedWeightsLeaveTheFileAndTheOutputsStayTheSame) {
  save_opg(path_, linear_graph(false), weights_);
  const Session in_memory(linear_graph(false), weights_, SessionOptions{.threads = 1});
  const Session loaded(path_, SessionOptions{.threads = 1});
  const size_t weight_bytes = weights_.at("w").nbytes();
  for (int round = 0; round < 2; ++round) {
    for (const int64_t rows : kRowCounts) {
      expect_same(outputs(loaded, rows), outputs(in_memory, rows), rows);
      EXPECT_LT(resident_bytes_of(path_), weight_bytes / 4) << rows << " rows, round " << round;
    }
  }
}

TEST_F(ReleasedWeights, ANodeThatReadsAReleasedWeightInPlaceReadsItsValues) {
  save_opg(path_, linear_graph(true), weights_);
  const Session in_memory(linear_graph(true), weights_, SessionOptions{.threads = 1});
  const Session loaded(path_, SessionOptions{.threads = 1});
  for (int round = 0; round < 2; ++round) {
    for (const int64_t rows : kRowCounts) expect_same(outputs(loaded, rows), outputs(in_memory, rows), rows);
  }
}

}  // namespace
}  // namespace opgraph
