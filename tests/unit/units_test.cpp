#include "core/units.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/text.hpp"
#include "near.hpp"

using prismsim::testing::Near;

using namespace prismsim::units;

TEST_CASE("bandwidths are parsed in bits or bytes per second") {
  std::string error;
  CHECK(*parse_bandwidth("400Gbps", &error) == Near{50e9});
  CHECK(*parse_bandwidth("400 Gb/s", &error) == Near{50e9});
  CHECK(*parse_bandwidth("450GBps", &error) == Near{450e9});
  CHECK(*parse_bandwidth("3.35TB/s", &error) == Near{3.35e12});
  CHECK(*parse_bandwidth("1GiBps", &error) == Near{1073741824.0});
  CHECK(*parse_bandwidth("100kbps", &error) == Near{12500.0});
}

TEST_CASE("malformed bandwidths are rejected with a reason") {
  std::string error;
  CHECK_FALSE(parse_bandwidth("400", &error));
  CHECK(error == "missing unit in bandwidth (write it as e.g. '400Gbps')");
  CHECK_FALSE(parse_bandwidth("400Gbs", &error));
  CHECK(error == "unknown unit 'Gbs' in bandwidth (e.g. '400Gbps')");
  CHECK_FALSE(parse_bandwidth("fast", &error));
  CHECK(error == "expected a bandwidth such as '400Gbps'");
  CHECK_FALSE(parse_bandwidth("0Gbps", &error));
  CHECK(error == "bandwidth must be positive");
  CHECK_FALSE(parse_bandwidth("-5GBps", &error));
}

TEST_CASE("durations sizes and compute rates use their units") {
  std::string error;
  CHECK(*parse_duration("5us", &error) == Near{5e-6});
  CHECK(*parse_duration("12ms", &error) == Near{12e-3});
  CHECK(*parse_duration("500ns", &error) == Near{5e-7});
  CHECK(*parse_duration("0s", &error) == 0.0);
  CHECK_FALSE(parse_duration("-1us", &error));
  CHECK(*parse_bytes("80GiB", &error) == Near{80.0 * 1073741824.0});
  CHECK(*parse_bytes("1.5GB", &error) == Near{1.5e9});
  CHECK(*parse_bytes("4096", &error) == 4096.0);
  CHECK(*parse_flop_rate("989Tflops", &error) == Near{989e12});
  CHECK(*parse_flop_rate("312 TFLOP/s", &error) == Near{312e12});
  CHECK_FALSE(parse_flop_rate("989T", &error));
  CHECK(*parse_flops("1.2Tflop", &error) == Near{1.2e12});
  CHECK(*parse_flops("3.5e12", &error) == Near{3.5e12});
  CHECK(*parse_count("50M", &error) == Near{50e6});
  CHECK(*parse_count("7e9", &error) == Near{7e9});
}

TEST_CASE("text tables split into fields and numbers parse whole") {
  CHECK(prismsim::split_fields("a,,b,\r", ',') == std::vector<std::string>{"a", "", "b", ""});
  CHECK(prismsim::split_fields("  8  1 float\r", ' ') ==
        std::vector<std::string>{"8", "1", "float"});
  CHECK(prismsim::split_fields("", ',').empty());
  CHECK(prismsim::parse_number("1.5e3") == 1500.0);
  CHECK_FALSE(prismsim::parse_number("1.5x"));
  CHECK_FALSE(prismsim::parse_number(""));
  CHECK_FALSE(prismsim::parse_number("1e999"));
}

TEST_CASE("quantities that a double cannot hold are out of range, tiny numbers are numbers") {
  std::string error;
  CHECK_FALSE(parse_bandwidth("1e308Gbps", &error));
  CHECK(error == "bandwidth out of range");
  CHECK_FALSE(parse_duration("1e308h", &error));
  CHECK(error == "duration out of range");
  CHECK_FALSE(prismsim::parse_number("1e400"));
  CHECK(*prismsim::parse_number("5e-324") > 0);
}
