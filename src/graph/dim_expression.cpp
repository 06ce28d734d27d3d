// A recursive-descent evaluator for dim_expression.h's grammar:
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '//' | '%') unary)*
//   unary   := '-' unary | atom
//   atom    := integer | symbol | '(' sum ')'
#include "graph/dim_expression.h"

#include <cctype>
#include <string>

#include "opgraph/core/error.h"

namespace opgraph {
namespace {

class Evaluator {
 public:
  Evaluator(std::string_view text, const DimBindings& dims) : text_(text), dims_(dims) {}

  int64_t evaluate() {
    const int64_t value = sum();
    skip_spaces();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(detail::concat("size expression '", text_, "': ", why, " at position ", pos_));
  }

  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }

  bool take(std::string_view token) {
    skip_spaces();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  int64_t sum() {
    int64_t value = product();
    while (true) {
      if (take("+")) {
        value += product();
      } else if (take("-")) {
        value -= product();
      } else {
        return value;
      }
    }
  }

  int64_t product() {
    int64_t value = unary();
    while (true) {
      if (take("*")) {
        value *= unary();
      } else if (take("//")) {
        value = floor_divide(value, unary());
      } else if (take("%")) {
        const int64_t divisor = unary();
        value -= floor_divide(value, divisor) * divisor;
      } else {
        return value;
      }
    }
  }

  int64_t floor_divide(int64_t a, int64_t b) const {
    if (b == 0) fail("division by zero");
    const int64_t quotient = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient;
  }

  int64_t unary() { return take("-") ? -unary() : atom(); }

  int64_t atom() {
    skip_spaces();
    if (take("(")) {
      const int64_t value = sum();
      if (!take(")")) fail("expected ')'");
      return value;
    }
    const size_t start = pos_;
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int64_t value = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        value = value * 10 + (text_[pos_++] - '0');
      }
      return value;
    }
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (start == pos_) fail("expected an integer, a symbol or '('");
    const std::string symbol(text_.substr(start, pos_ - start));
    auto it = dims_.find(symbol);
    if (it == dims_.end()) fail("the symbol '" + symbol + "' is not a dimension of the graph's inputs");
    return it->second;
  }

  std::string_view text_;
  const DimBindings& dims_;
  size_t pos_ = 0;
};

}  // namespace

int64_t evaluate_dim_expression(std::string_view expression, const DimBindings& dims) {
  return Evaluator(expression, dims).evaluate();
}

}  // namespace opgraph
