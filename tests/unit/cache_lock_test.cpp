// SPDX-License-Identifier: GPL-2.0
// The cache's locks (vm/cache_lock.hpp), with the real binary: a run that
// needs a kernel another process holds waits, and says at once for what and
// who holds it; a run that needs another kernel does not wait.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "cache_lock.hpp"
#include "../command.hpp"
#include "kernels.hpp"

namespace fs = std::filesystem;
using namespace pinmatrix;
using pinmatrix::test::run_pinmatrix;

namespace {

std::string slurp(const fs::path &p)
{
	std::ifstream in(p);
	return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A stub image:DIR kernel (its preparation needs no script).
fs::path stub_image(const fs::path &dir)
{
	fs::create_directories(dir / "modules");
	fs::create_directories(dir / "build");
	std::ofstream(dir / "release") << "6.99.0-stub\n";
	std::ofstream(dir / "config") << "CONFIG_BLK_DEV_INITRD=y\n";
	std::ofstream(dir / "vmlinux") << "ELF\n";
	return dir;
}

// `pinmatrix ARGS` in the background, stdout and stderr to files; killed
// by its PID if the test leaves it running.
struct background_run {
	pid_t pid = -1;
	background_run(const std::string &args, const fs::path &out, const fs::path &err)
	{
		pid = fork();
		if (pid == 0) {
			const std::string cmd = "exec " + std::string(PINMATRIX_BIN) + " " + args + " >" + out.string() +
						" 2>" + err.string();
			execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
			_exit(127);
		}
	}
	bool running() const { return pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0; }
	// Its exit status, or -1 if it did not end within the limit.
	int wait(std::chrono::seconds limit)
	{
		const auto end = std::chrono::steady_clock::now() + limit;
		while (std::chrono::steady_clock::now() < end) {
			int status = 0;
			if (waitpid(pid, &status, WNOHANG) == pid) {
				pid = -1;
				return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
		return -1;
	}
	~background_run()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
};

bool eventually_contains(const fs::path &file, const std::string &text, std::chrono::seconds limit)
{
	const auto end = std::chrono::steady_clock::now() + limit;
	while (std::chrono::steady_clock::now() < end) {
		if (slurp(file).find(text) != std::string::npos)
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	return false;
}

struct CacheLock : ::testing::Test {
	fs::path dir = fs::temp_directory_path() / ("pm-cache-lock-" + std::to_string(getpid()));
	fs::path cache = dir / "cache";
	void SetUp() override
	{
		fs::remove_all(dir);
		fs::create_directories(cache);
	}
	void TearDown() override { fs::remove_all(dir); }
};

} // namespace

TEST_F(CacheLock, RunNeedingAKernelAnotherHoldsWaitsAndSaysWhoHoldsIt)
{
	const fs::path a = stub_image(dir / "a");
	const std::string spec = "image:" + a.string();
	std::optional<cache_entry_lock> held;
	held.emplace(cache, kernel_lock_name(parse_kernel_spec(spec)), "kernel '" + spec + "'", std::cerr);

	background_run waiter("kernel build --kernel " + spec + " --cache " + cache.string(), dir / "out", dir / "err");
	ASSERT_TRUE(eventually_contains(dir / "err", "pinmatrix: waiting for kernel '" + spec + "': held by PID " +
							     std::to_string(getpid()) + " (",
					std::chrono::seconds(30)))
		<< slurp(dir / "err");
	EXPECT_NE(slurp(dir / "err").find(", for 0m0"), std::string::npos) << slurp(dir / "err");
	EXPECT_NE(slurp(dir / "err").find((cache / "locks").string()), std::string::npos) << slurp(dir / "err");
	EXPECT_TRUE(waiter.running()) << slurp(dir / "err");

	held.reset();	// the holder goes: the waiter goes on, to the same end as a run that never waited
	const int rc = waiter.wait(std::chrono::seconds(30));
	const auto alone = run_pinmatrix("kernel build --kernel " + spec + " --cache " + cache.string());
	EXPECT_EQ(rc, alone.exit_code) << slurp(dir / "err") << "\n---\n" << alone.output;
	EXPECT_EQ(alone.output.find("waiting"), std::string::npos) << alone.output;
}

TEST_F(CacheLock, RunNeedingAnotherKernelDoesNotWait)
{
	const std::string held_spec = "image:" + stub_image(dir / "a").string();
	const std::string other_spec = "image:" + stub_image(dir / "b").string();
	cache_entry_lock held(cache, kernel_lock_name(parse_kernel_spec(held_spec)), "kernel 'a'", std::cerr);
	background_run other("kernel build --kernel " + other_spec + " --cache " + cache.string(), dir / "out",
			     dir / "err");
	EXPECT_NE(other.wait(std::chrono::seconds(30)), -1) << "still waiting while another kernel's lock is held\n"
							     << slurp(dir / "err");
	EXPECT_EQ(slurp(dir / "err").find("waiting"), std::string::npos) << slurp(dir / "err");
}

TEST(CacheLockHolder, SaysPidCommandAndHowLong)
{
	EXPECT_EQ(lock_holder_text("4242\t1000\tkernel 'build'\tpinmatrix vm --kernel build", 1190),
		  "PID 4242 (pinmatrix vm --kernel build), for 3m10s");
	EXPECT_EQ(lock_holder_text(std::to_string(getpid()) + "\t1000\tkernel 'build'\tpinmatrix vm --matrix m", 1000),
		  "PID " + std::to_string(getpid()) + " (another guest of this run), for 0m00s");
	EXPECT_EQ(lock_holder_text("", 1190), "a process that has not said who it is yet");
	EXPECT_EQ(lock_holder_text("garbage", 1190), "a process that has not said who it is yet");
}

TEST(CacheLockName, IsOneFileNameNeverAPath)
{
	const fs::path cache = fs::temp_directory_path() / ("pm-cache-lock-name-" + std::to_string(getpid()));
	for (const char *bad : {"../x", "a/b", "", ".hidden"})
		EXPECT_THROW(cache_entry_lock(cache, bad, "x", std::cerr), std::invalid_argument) << bad;
	EXPECT_FALSE(fs::exists(cache));
	const std::string a = kernel_lock_name(parse_kernel_spec("debian:6.1"));
	EXPECT_EQ(a, kernel_lock_name(parse_kernel_spec("debian:6.1")));
	EXPECT_NE(a, kernel_lock_name(parse_kernel_spec("debian:6.12")));
	EXPECT_NE(kernel_lock_name(parse_kernel_spec("build")), kernel_lock_name(parse_kernel_spec("build:debug")));
}
