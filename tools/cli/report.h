// Text for the tool's reports: tables, lists and byte counts.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace opgraph::cli {

using TableRow = std::vector<std::string>;

// Writes the rows with each column padded to its widest cell, two spaces
// apart and indented by two; the first row is the heading.
void print_table(std::ostream& out, const std::vector<TableRow>& rows);

// "a, b, c", or `empty` for no items.
std::string joined(const std::vector<std::string>& items, const std::string& empty = "");

// "1.5 KiB", for byte counts.
std::string format_bytes(size_t bytes);

}  // namespace opgraph::cli
