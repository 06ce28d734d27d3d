// Schemas the schema parser's fuzz target (fuzz/schema_parser_fuzzer.cpp)
// found it mishandling: each now parses and prints back as itself, or is
// refused with an opgraph::Error.
#include <gtest/gtest.h>

#include <string>

#include "opgraph/registry/schema.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

// Device, Layout and MemoryFormat defaults print bare where they are names,
// and quoted where a bare word would not parse back as the same string.
TEST(SchemaFuzzFindings, NameDefaultsThatAreNotIdentifiersPrintQuoted) {
  const Schema schema = Schema::parse(
      "f(Device d=\"cuda:0\", Layout l='it\\'s', MemoryFormat? m=\"None\", Device e=\"\", "
      "MemoryFormat f=contiguous_format) -> Tensor");
  const std::string printed = schema.str();
  EXPECT_EQ(printed,
            "f(Device d=\"cuda:0\", Layout l=\"it's\", MemoryFormat? m=\"None\", Device e=\"\", "
            "MemoryFormat f=contiguous_format) -> Tensor");
  EXPECT_EQ(Schema::parse(printed), schema);
}

// A one-value default of int[N] is N copies: an N no schema needs is refused
// before it takes all memory.
TEST(SchemaFuzzFindings, ListSizesAreBounded) {
  EXPECT_EQ(Schema::parse("f(int[1024] x=0) -> Tensor").arguments[0].type.list_size, 1024);
  const std::string message = error_of([] { Schema::parse("f(int[29223377] x=0) -> Tensor"); });
  EXPECT_NE(message.find("expected a list size of at most 1024, found '2' at column 7"), std::string::npos) << message;
}

}  // namespace
}  // namespace opgraph
