// SPDX-License-Identifier: GPL-2.0
// A case's child and its message (lib/child_process.hpp): the message is
// whole when the child closes its pipe or when it exits, even where a
// process it left behind still holds the pipe (CI: a memory block's
// offlining writer stuck in the kernel kept case C's pipe open, and the
// case that had finished in seconds was an ERROR at its 60 s timeout).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>

#include "child_process.hpp"

using namespace pinmatrix;
using namespace std::chrono;

namespace {

// A child (fork_piped) in a process group of its own that writes TEXT on
// the pipe and exits 7; with leave_a_holder, first a grandchild that
// inherits the pipe's write end and waits to be killed (killpg(pid) ends
// it); with hang, the child itself waits so.
piped_child child_writing(const std::string &text, bool leave_a_holder, bool hang = false)
{
	piped_child c = fork_piped([&](int to_parent) {
		setpgid(0, 0);
		if (leave_a_holder && fork() == 0)
			for (;;)
				pause();
		while (hang)
			pause();
		_exit(write(to_parent, text.data(), text.size()) == ssize_t(text.size()) ? 7 : 3);
	});
	setpgid(c.pid, c.pid);	// before the child's own call, too: no race
	return c;
}

} // namespace

TEST(ChildMessage, WholeWhenTheChildClosesItsPipe)
{
	auto c = child_writing("{\"observation\":1}", false);
	const auto m = read_child_message(c.from_child.get(), c.pid, steady_clock::now() + seconds(30));
	ASSERT_TRUE(m);
	EXPECT_EQ(m->text, "{\"observation\":1}");
	int status = 0;
	if (!m->reaped)
		waitpid(c.pid, &status, 0);
	else
		status = m->status;
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7);
}

TEST(ChildMessage, WholeWhenTheChildExitsThoughAProcessItLeftHoldsThePipe)
{
	auto c = child_writing("{\"observation\":2}", true);
	const auto t0 = steady_clock::now();
	const auto m = read_child_message(c.from_child.get(), c.pid, t0 + seconds(30));
	const auto took = steady_clock::now() - t0;
	killpg(c.pid, SIGKILL);	// the holder, left in the child's group
	ASSERT_TRUE(m) << "the deadline came: the message waited for the pipe's end";
	EXPECT_LT(took, seconds(10));
	EXPECT_EQ(m->text, "{\"observation\":2}");
	EXPECT_TRUE(m->reaped);
	EXPECT_TRUE(WIFEXITED(m->status) && WEXITSTATUS(m->status) == 7);
}

TEST(ChildMessage, NothingAtTheDeadline)
{
	auto c = child_writing("", false, true);
	const auto m = read_child_message(c.from_child.get(), c.pid, steady_clock::now() + milliseconds(600));
	EXPECT_FALSE(m);
	killpg(c.pid, SIGKILL);
	waitpid(c.pid, nullptr, 0);
}
