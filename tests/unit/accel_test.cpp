// SPDX-License-Identifier: GPL-2.0
// Which accelerator a guest boots with (vm/accel.hpp): what --accel asks,
// whether /dev/kvm opens, and a KVM failure remembered for the host's boot.

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "accel.hpp"

namespace fs = std::filesystem;
using pinmatrix::choose_accel;

namespace {

class Accel : public ::testing::Test {
protected:
	void SetUp() override
	{
		root_ = fs::temp_directory_path() / ("pinmatrix-accel-" + std::to_string(::getpid()));
		fs::remove_all(root_);
		fs::create_directories(root_ / "cache");
		std::ofstream(root_ / "kvm-that-opens") << "";
	}
	void TearDown() override { fs::remove_all(root_); }
	fs::path cache() const { return root_ / "cache"; }
	fs::path kvm() const { return root_ / "kvm-that-opens"; }
	fs::path root_;
};

TEST_F(Accel, TcgAndKvmAreWhatWasAskedWithoutAFallback)
{
	EXPECT_EQ(choose_accel("tcg", cache(), "host", kvm()).accel, "tcg");
	const auto k = choose_accel("kvm", cache(), "host", root_ / "no-kvm");
	EXPECT_EQ(k.accel, "kvm") << "--accel kvm is tried even where /dev/kvm is missing: the run says why it failed";
	EXPECT_FALSE(k.may_fall_back);
	EXPECT_TRUE(k.fallback.is_null());
}

TEST_F(Accel, AutoTriesKvmWhereTheDeviceOpens)
{
	const auto a = choose_accel("auto", cache(), "host", kvm());
	EXPECT_EQ(a.accel, "kvm");
	EXPECT_TRUE(a.may_fall_back);
	EXPECT_TRUE(a.fallback.is_null());
}

TEST_F(Accel, AutoTakesTcgWhereTheDeviceDoesNotOpenAndSaysWhy)
{
	const auto a = choose_accel("auto", cache(), "host", root_ / "no-kvm");
	EXPECT_EQ(a.accel, "tcg");
	EXPECT_FALSE(a.may_fall_back);
	const std::string why = a.fallback.value("why", "");
	EXPECT_NE(why.find("no-kvm: No such file or directory"), std::string::npos) << why;
	EXPECT_EQ(a.fallback.value("earlier", true), false);
}

TEST_F(Accel, AFailureIsRememberedForTheHostsBoot)
{
	pinmatrix::remember_kvm_failure(cache(), "host", "QEMU exited with status 134 under KVM: failed to set MSR", "debian-6.1");
	const auto a = choose_accel("auto", cache(), "host", kvm());
	EXPECT_EQ(a.accel, "tcg");
	EXPECT_EQ(a.fallback.value("earlier", false), true);
	const std::string why = a.fallback.value("why", "");
	EXPECT_NE(why.find("failed to set MSR"), std::string::npos) << why;
	EXPECT_NE(why.find("an earlier guest in this host boot"), std::string::npos) << why;
	EXPECT_EQ(pinmatrix::kvm_failure_on_record(cache(), "host").value("guest_kernel", ""), "debian-6.1");
	// --accel kvm still tries: the record only spares auto the attempt.
	EXPECT_EQ(choose_accel("kvm", cache(), "host", kvm()).accel, "kvm");
	// Another CPU model is another record: it is tried.
	EXPECT_EQ(choose_accel("auto", cache(), "qemu64", kvm()).accel, "kvm");
}

TEST_F(Accel, AKvmCpuModelIsOneQemuArgumentAndAFileName)
{
	for (const char *ok : {"host", "max", "qemu64,+pdpe1gb,+rdrand", "EPYC-v4", "host,migratable=off"})
		EXPECT_NO_THROW(pinmatrix::check_kvm_cpu(ok)) << ok;
	for (const char *bad : {"", "../x", "host x", "a/b", "host\nqemu64"})
		EXPECT_THROW(pinmatrix::check_kvm_cpu(bad), std::exception) << bad;
}

TEST_F(Accel, AnUnreadableRecordMeansKvmIsTriedAgain)
{
	pinmatrix::remember_kvm_failure(cache(), "host", "x", "k");
	for (const auto &e : fs::directory_iterator(cache() / "accel"))
		std::ofstream(e.path(), std::ios::trunc) << "{not json";
	EXPECT_TRUE(pinmatrix::kvm_failure_on_record(cache(), "host").is_null());
	EXPECT_EQ(choose_accel("auto", cache(), "host", kvm()).accel, "kvm");
}

} // namespace
