#pragma once

namespace prismsim {

/// A visitor of std::variant made of lambdas, one per alternative.
template <typename... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <typename... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace prismsim
