// SPDX-License-Identifier: GPL-2.0
// pinmatrix(1): roff_text() escapes what roff would read as a request or an
// escape; `pinmatrix --manpage` has a section, the options and the exit
// codes of every command --help lists (tests/packaging/lintian.sh renders
// the installed page and checks it for warnings).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "../command.hpp"
#include "manpage.hpp"

using namespace pinmatrix;

TEST(Manpage, RoffTextEscapesWhatRoffWouldRead)
{
	EXPECT_EQ(roff_text("a-b"), "a\\-b");
	EXPECT_EQ(roff_text("C:\\path"), "C:\\epath");
	EXPECT_EQ(roff_text("say \"x\""), "say \\(dqx\\(dq");
	EXPECT_EQ(roff_text(".TH evil"), "\\&.TH evil");
	EXPECT_EQ(roff_text("'br"), "\\&'br");
	EXPECT_EQ(roff_text("one\n.SH two"), "one\n\\&.SH two");
	EXPECT_EQ(roff_text("mid.dle"), "mid.dle");
}

TEST(Manpage, EveryCommandWithItsOptionsAndExitCodes)
{
	const auto page = test::run_pinmatrix("--manpage", "/dev/null");
	ASSERT_EQ(page.exit_code, 0);
	const auto help = test::run_pinmatrix("--help");
	std::smatch m;
	std::string rest = help.output.substr(help.output.find("Subcommands:"));
	int commands = 0;
	for (std::regex line(R"(\n  ([a-z-]+) )"); std::regex_search(rest, m, line); rest = m.suffix(), commands++)
		EXPECT_NE(page.output.find("\n.SS pinmatrix " + m[1].str() + "\n"), std::string::npos) << m[1];
	EXPECT_GE(commands, 9);
	EXPECT_NE(page.output.find(".SS pinmatrix kernel build\n"), std::string::npos);
	EXPECT_NE(page.output.find("\\fB\\-\\-module\\fR"), std::string::npos);
	EXPECT_NE(page.output.find("Exit codes: 0 every case passed"), std::string::npos);
	EXPECT_EQ(page.output.find("bisect\\-step"), std::string::npos) << "a hidden command is in the page";
	// No line of the page is a request it did not mean: every line that
	// starts with '.' or '\'' is one of the man macros it writes.
	std::istringstream lines(page.output);
	for (std::string l; std::getline(lines, l);)
		if (!l.empty() && (l[0] == '.' || l[0] == '\'')) {
			EXPECT_TRUE(std::regex_match(l, std::regex(R"(\.(TH|SH|SS|TP|PP|B|I|BR|br)( .*)?)"))) << l;
		}
}
