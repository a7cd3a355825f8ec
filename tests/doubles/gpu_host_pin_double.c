// SPDX-License-Identifier: GPL-2.0
/*
 * TEST DOUBLE: a stand-in for a GPU driver's host-pin entry points, for CI
 * machines without a GPU. It is NOT a CUDA or HIP implementation: it exports
 * the symbols pinmatrix dlopen()s (lib/gpu_pin.hpp) -
 *   CUDA driver API   cuInit, cuDeviceGet, cuDevicePrimaryCtxRetain,
 *                     cuCtxSetCurrent, cuMemHostRegister(_v2),
 *                     cuMemHostUnregister, cuGetErrorName, cuDriverGetVersion
 *   CUDA runtime      cudaHostRegister, cudaHostUnregister, cudaHostAlloc,
 *                     cudaFreeHost, cudaGetErrorString
 *   HIP               hipHostRegister, hipHostUnregister, hipGetErrorString
 * - and pins through the project's test module (/dev/pinmatrix) with the
 * contract of one NVIDIA driver generation, chosen by the environment:
 *   PINMATRIX_DOUBLE_CONTRACT=r535   FOLL_PIN                (R525-R535.161)
 *   PINMATRIX_DOUBLE_CONTRACT=r555   FOLL_PIN | FOLL_LONGTERM (R555, x86)
 * (default r535; -DPINMATRIX_DOUBLE_DEFAULT_CONTRACT=... builds a variant).
 * pinmatrix_test_double_contract() tells pinmatrix that it loaded this
 * double, so every record says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pinmatrix.h"

#ifndef PINMATRIX_DOUBLE_DEFAULT_CONTRACT
#define PINMATRIX_DOUBLE_DEFAULT_CONTRACT "r535"
#endif

#define EXPORT __attribute__((visibility("default")))

/* Results as the real APIs number them (0 success, 1 invalid value, 2 out
 * of memory, 3 not initialised / initialisation error). */
enum { OK = 0, INVALID = 1, NO_MEMORY = 2, NOT_READY = 3, NOT_REGISTERED = 712 };

#define MAX_PINS 64
static struct {
	void *addr;
	size_t length;
	uint32_t id;
	int allocated;
} pins[MAX_PINS];
static int module_fd = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int is_r555(void)
{
	const char *c = getenv("PINMATRIX_DOUBLE_CONTRACT");
	if (!c || !*c)
		c = PINMATRIX_DOUBLE_DEFAULT_CONTRACT;
	return !strcmp(c, "r555") || !strcmp(c, "R555");
}

EXPORT const char *pinmatrix_test_double_contract(void)
{
	return is_r555() ? "R555 contract: FOLL_PIN|FOLL_LONGTERM" : "R535 contract: FOLL_PIN";
}

static int open_module(void)
{
	if (module_fd < 0)
		module_fd = open("/dev/" PINMATRIX_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	return module_fd;
}

/* Pins [addr, addr + length) through the module; the pin lives as long as
 * the module's fd (this process) or until unpin(). */
static int pin(void *addr, size_t length, int allocated)
{
	const long ps = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(ps - 1);
	uintptr_t end = ((uintptr_t)addr + length + ps - 1) & ~(uintptr_t)(ps - 1);
	size_t npages = (end - start) / ps;
	int slot = -1, rc = OK;

	if (!addr || !length)
		return INVALID;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_PINS; i++)
		if (!pins[i].addr) {
			slot = i;
			break;
		}
	if (slot < 0 || open_module() < 0) {
		rc = slot < 0 ? NO_MEMORY : NOT_READY;
		goto out;
	}
	uint64_t *pfns = calloc(npages, sizeof(*pfns));
	if (!pfns) {
		rc = NO_MEMORY;
		goto out;
	}
	struct pinmatrix_pin p = {
		.size = sizeof(p),
		.contract = is_r555() ? PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM : PINMATRIX_CONTRACT_FOLL_PIN,
		.flags = PINMATRIX_PIN_WRITE,
		.addr = start,
		.npages = npages,
		.pfns = (uintptr_t)pfns,
	};
	if (ioctl(module_fd, PINMATRIX_IOC_PIN, &p)) {
		rc = errno == ENOMEM ? NO_MEMORY : INVALID;
	} else {
		pins[slot].addr = addr;
		pins[slot].length = length;
		pins[slot].id = p.id;
		pins[slot].allocated = allocated;
	}
	free(pfns);
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

static int unpin(void *addr, int allocated)
{
	int rc = NOT_REGISTERED;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_PINS; i++) {
		if (pins[i].addr != addr || pins[i].allocated != allocated)
			continue;
		struct pinmatrix_unpin u = {.size = sizeof(u), .id = pins[i].id};
		rc = ioctl(module_fd, PINMATRIX_IOC_UNPIN, &u) ? INVALID : OK;
		if (allocated)
			munmap(pins[i].addr, pins[i].length);
		pins[i].addr = NULL;
		break;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

static const char *error_string(int e)
{
	switch (e) {
	case OK: return "no error (pinmatrix test double)";
	case INVALID: return "invalid value (pinmatrix test double)";
	case NO_MEMORY: return "out of memory (pinmatrix test double)";
	case NOT_READY: return "/dev/pinmatrix not available (pinmatrix test double)";
	case NOT_REGISTERED: return "not registered (pinmatrix test double)";
	}
	return "unknown error (pinmatrix test double)";
}

/* CUDA driver API */
EXPORT int cuInit(unsigned flags) { (void)flags; return open_module() < 0 ? NOT_READY : OK; }
EXPORT int cuDeviceGet(int *dev, int ordinal) { if (!dev || ordinal) return INVALID; *dev = 0; return OK; }
EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	static int token;
	if (!ctx || dev)
		return INVALID;
	*ctx = &token;
	return OK;
}
EXPORT int cuCtxSetCurrent(void *ctx) { (void)ctx; return OK; }
EXPORT int cuDriverGetVersion(int *v) { if (!v) return INVALID; *v = is_r555() ? 12050 : 12020; return OK; }
EXPORT int cuMemHostRegister_v2(void *p, size_t n, unsigned flags) { (void)flags; return pin(p, n, 0); }
EXPORT int cuMemHostRegister(void *p, size_t n, unsigned flags) { (void)flags; return pin(p, n, 0); }
EXPORT int cuMemHostUnregister(void *p) { return unpin(p, 0); }
EXPORT int cuGetErrorName(int e, const char **s) { if (!s) return INVALID; *s = error_string(e); return OK; }

/* CUDA runtime */
EXPORT int cudaHostRegister(void *p, size_t n, unsigned flags) { (void)flags; return pin(p, n, 0); }
EXPORT int cudaHostUnregister(void *p) { return unpin(p, 0); }
EXPORT const char *cudaGetErrorString(int e) { return error_string(e); }
/* The real driver allocates kernel pages; the double allocates anonymous
 * memory, faults it in and pins it, so where it lands is up to the kernel. */
EXPORT int cudaHostAlloc(void **p, size_t n, unsigned flags)
{
	(void)flags;
	if (!p || !n)
		return INVALID;
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m == MAP_FAILED)
		return NO_MEMORY;
	int rc = pin(m, n, 1);
	if (rc) {
		munmap(m, n);
		return rc;
	}
	*p = m;
	return OK;
}
EXPORT int cudaFreeHost(void *p) { return unpin(p, 1); }

/* HIP */
EXPORT int hipHostRegister(void *p, size_t n, unsigned flags) { (void)flags; return pin(p, n, 0); }
EXPORT int hipHostUnregister(void *p) { return unpin(p, 0); }
EXPORT const char *hipGetErrorString(int e) { return error_string(e); }
