#include "core/json.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

using namespace prismsim;
using Layout = JsonWriter::Layout;

TEST_CASE("json: a block object indents each member two spaces per level") {
  JsonWriter j;
  j.begin_object().member("a", 1).key("b").begin_object().member("c", "x").end();
  j.key("d").begin_object(Layout::line).member("e", 0.5).key("f").values(std::vector<int>{1, 2});
  j.end().key("g").begin_array().end().end();
  CHECK(
      j.text() ==
      "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": \"x\"\n  },\n  \"d\": {\"e\": 0.5, \"f\": [1, 2]},\n"
      "  \"g\": []\n}");
}

TEST_CASE("json: compact and rows layouts leave out spaces, rows put members on lines") {
  JsonWriter j;
  j.begin_object(Layout::compact).member("u", "ms").key("e").begin_array(Layout::rows);
  j.begin_object(Layout::compact).member("x", 1).key("ts").fixed(1.23456, 3).end();
  j.begin_object(Layout::compact).member("x", 2).end();
  j.end().end();
  CHECK(j.text() == "{\"u\":\"ms\",\"e\":[\n{\"x\":1,\"ts\":1.235},\n{\"x\":2}\n]}");
}

TEST_CASE("json: wrap starts the next member one column right of the opening bracket") {
  JsonWriter j;
  j.begin_object().key("points").begin_array();
  j.begin_object(Layout::line).member("a", 1).wrap().member("b", 2).member("c", 3).end();
  j.end().end();
  CHECK(j.text() == "{\n  \"points\": [\n    {\"a\": 1,\n     \"b\": 2, \"c\": 3}\n  ]\n}");
}

TEST_CASE("json: numbers read back exactly, what JSON cannot hold is null") {
  JsonWriter j;
  j.begin_array(Layout::line)
      .value(0.1)
      .value(1e-300)
      .value(2.0)
      .value(uint64_t{18446744073709551615u});
  j.value(std::nan("")).value(std::numeric_limits<double>::infinity()).significant(1.23456789, 3);
  j.value(true).null().end();
  CHECK(j.text() == "[0.1, 1e-300, 2, 18446744073709551615, null, null, 1.23, true, null]");
}

TEST_CASE("json: strings are escaped") {
  CHECK(json_string("a\"b\\c\nd\te\x01") == "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  JsonWriter j;
  j.begin_object(Layout::line).member("k\"", "v").end();
  CHECK(j.text() == "{\"k\\\"\": \"v\"}");
}

TEST_CASE("json: flush hands the text written so far to a stream and keeps the layout") {
  std::ostringstream out;
  JsonWriter j;
  j.begin_array(Layout::rows).value(1);
  j.flush(out);
  j.value(2).end();
  j.flush(out);
  CHECK(out.str() == "[\n1,\n2\n]");
  CHECK(j.text().empty());
}
