// SPDX-License-Identifier: GPL-2.0
// lib/text.hpp: join, the one way the suite puts items in a line.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "text.hpp"

using namespace pinmatrix;

namespace {

// A row of a table, its name as the tables hold it.
struct named {
	const char *name;
	int id;
};

std::string id_text(const named &n)
{
	return "#" + std::to_string(n.id);
}

} // namespace

TEST(TextJoin, StringsWithTheSeparatorBetween)
{
	EXPECT_EQ(join(std::vector<std::string>{"a", "b", "c"}, ", "), "a, b, c");
	EXPECT_EQ(join(std::vector<std::string_view>{"FOLL_WRITE", "FOLL_PIN"}, "|"), "FOLL_WRITE|FOLL_PIN");
	EXPECT_EQ(join(std::vector<const char *>{"x", "y"}, " + "), "x + y");
	EXPECT_EQ(join(std::set<std::string>{"zone Normal", "pageblock MIGRATE_CMA"}, ", "),
		  "pageblock MIGRATE_CMA, zone Normal");
}

TEST(TextJoin, NoneOrOneItemHasNoSeparator)
{
	EXPECT_EQ(join(std::vector<std::string>{}, ", "), "");
	EXPECT_EQ(join(std::vector<std::string>{"only"}, ", "), "only");
	EXPECT_EQ(join(std::vector<int>{}, ", ", [](int i) { return std::to_string(i); }), "");
}

// An empty item is an item: its separators stay.
TEST(TextJoin, EmptyItemsKeepTheirSeparators)
{
	EXPECT_EQ(join(std::vector<std::string>{"", "a", ""}, "/"), "/a/");
}

TEST(TextJoin, EachItemAsTheProjectionGivesIt)
{
	const std::vector<int> ids = {1, 22, 333};
	EXPECT_EQ(join(ids, ",", [](int i) { return std::to_string(i); }), "1,22,333");

	const named rows[] = {{"ordinary", 1}, {"movable", 2}};
	EXPECT_EQ(join(rows, ", ", &named::name), "ordinary, movable");
	EXPECT_EQ(join(rows, " ", id_text), "#1 #2");
	EXPECT_EQ(join(rows, "; ", [](const named &n) -> std::string_view { return n.name; }), "ordinary; movable");
}
