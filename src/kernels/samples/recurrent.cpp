// Samples of the recurrent layers (recurrent.cpp): LSTM and GRU stacks of one and
// two layers, one and two directions, with and without biases, time-major
// and batch-first, over sequences of one step and several; initial states
// of the wrong shape and weight lists that do not fit the layers are
// refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

constexpr int64_t kInput = 3, kHidden = 4;

struct Stack {
  int64_t steps, batch, layers;
  bool biases, bidirectional, batch_first;
};

const std::vector<Stack>& stacks() {
  static const std::vector<Stack> cases = {
      {5, 2, 1, true, false, false}, {5, 2, 1, true, false, true}, {4, 3, 1, true, true, false},
      {3, 2, 2, true, false, false}, {3, 1, 2, false, true, true}, {1, 1, 1, false, false, false},
  };
  return cases;
}

// The weights of every layer and direction: w_ih, w_hh (and b_ih, b_hh), `gates` blocks each.
std::vector<SampleTensor> weights(const Stack& s, int64_t gates, DType dtype) {
  const int64_t directions = s.bidirectional ? 2 : 1;
  std::vector<SampleTensor> params;
  for (int64_t layer = 0; layer < s.layers; ++layer) {
    const int64_t in = layer == 0 ? kInput : kHidden * directions;
    for (int64_t d = 0; d < directions; ++d) {
      params.push_back(tensor(dtype, {gates * kHidden, in}).in(-0.5, 0.5));
      params.push_back(tensor(dtype, {gates * kHidden, kHidden}).in(-0.5, 0.5));
      if (s.biases) {
        params.push_back(tensor(dtype, {gates * kHidden}).in(-0.5, 0.5));
        params.push_back(tensor(dtype, {gates * kHidden}).in(-0.5, 0.5));
      }
    }
  }
  return params;
}

std::vector<Attr> stack_attrs(const Stack& s) {
  return {{"has_biases", s.biases}, {"num_layers", s.layers},           {"dropout", 0.0},
          {"train", false},         {"bidirectional", s.bidirectional}, {"batch_first", s.batch_first}};
}

// input, the initial states (LSTM: h0 and c0, a Tensor[]; GRU: hx), the weights.
Sample layer_sample(const Stack& s, bool lstm, DType dtype, Shape state = {}) {
  const int64_t directions = s.bidirectional ? 2 : 1;
  if (state.empty()) state = {s.layers * directions, s.batch, kHidden};
  std::vector<SampleTensor> inputs = {
      tensor(dtype, s.batch_first ? Shape{s.batch, s.steps, kInput} : Shape{s.steps, s.batch, kInput})};
  inputs.push_back(tensor(dtype, state));
  if (lstm) inputs.push_back(tensor(dtype, state));
  const std::vector<SampleTensor> params = weights(s, lstm ? 4 : 3, dtype);
  inputs.insert(inputs.end(), params.begin(), params.end());
  Sample sample = good(std::move(inputs), stack_attrs(s));
  sample.list_sizes = lstm ? std::vector<size_t>{2, params.size()} : std::vector<size_t>{params.size()};
  return sample;
}

std::vector<Sample> layers(bool lstm) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (const Stack& s : stacks()) table.push_back(layer_sample(s, lstm, dtype));
  }
  const Stack one = stacks().front();
  Sample wrong_state = layer_sample(one, lstm, F32, {1, 5, kHidden});
  wrong_state.error = "expected [1, 2, 4] (num_layers * directions, batch, hidden), got float32[1, 5, 4]";
  table.push_back(wrong_state);
  Sample two_layers = layer_sample(one, lstm, F32);
  std::get<int64_t>(two_layers.attrs[1].second) = 2;
  two_layers.error = "expected [2, 2, 4] (num_layers * directions, batch, hidden)";
  table.push_back(two_layers);
  return table;
}

}  // namespace

void register_recurrent_samples(BuiltinOps& builtins) {
  builtins.add_samples("aten::lstm.input", layers(true));
  builtins.add_samples("aten::gru.input", layers(false));
}

}  // namespace opgraph::kernels::samples
