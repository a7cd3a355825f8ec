/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * pinmatrix test module ABI, shared by kmod/pinmatrix and its C++ users.
 *
 * The module holds first pins on a process's own pages with a chosen GUP
 * contract and reports where pages live (PFN, zone, pageblock migratetype),
 * so that a second, long-term pin taken elsewhere (ibv_reg_mr) can be
 * checked against section 16.5 of the CMA incident write-up.
 *
 * Every argument struct starts with its own size: the module rejects a size
 * it does not know with -EINVAL, so a mismatched header fails loudly.
 */
#ifndef _UAPI_PINMATRIX_H
#define _UAPI_PINMATRIX_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define PINMATRIX_DEVICE_NAME	"pinmatrix"
/*
 * 2: PINMATRIX_PAGE_LONGTERM_PINNABLE means something only with
 * PINMATRIX_PAGE_PINNABLE_KNOWN; a probe no longer reads page tables.
 * 3: struct pinmatrix_pin.pinned. 4: struct pinmatrix_info.foll.
 * 5: PINMATRIX_PIN_LOCK, struct pinmatrix_pin_info.lock_waiters.
 */
#define PINMATRIX_ABI_VERSION	5

/* Zone of a page: the kernel's zone, folded into a stable numbering. */
enum pinmatrix_zone {
	PINMATRIX_ZONE_DMA	= 0,
	PINMATRIX_ZONE_DMA32	= 1,
	PINMATRIX_ZONE_NORMAL	= 2,
	PINMATRIX_ZONE_HIGHMEM	= 3,
	PINMATRIX_ZONE_MOVABLE	= 4,
	PINMATRIX_ZONE_DEVICE	= 5,
	PINMATRIX_ZONE_UNKNOWN	= 255,
};

/* Pageblock migratetype, folded likewise (MIGRATE_CMA exists only with CONFIG_CMA). */
enum pinmatrix_migratetype {
	PINMATRIX_MT_UNMOVABLE		= 0,
	PINMATRIX_MT_MOVABLE		= 1,
	PINMATRIX_MT_RECLAIMABLE	= 2,
	PINMATRIX_MT_HIGHATOMIC		= 3,
	PINMATRIX_MT_CMA		= 4,
	PINMATRIX_MT_ISOLATE		= 5,
	PINMATRIX_MT_UNKNOWN		= 255,
};

/* How the module read a pageblock's migratetype (struct pinmatrix_info). */
enum pinmatrix_mt_method {
	PINMATRIX_MT_METHOD_NONE		= 0,
	/* the section's pageblock bitmap, read as get_pfnblock_flags_mask() does */
	PINMATRIX_MT_METHOD_PAGEBLOCK_BITMAP	= 1,
};

/* struct pinmatrix_page.flags */
/* a page is mapped there; every other field is 0 or UNKNOWN without it */
#define PINMATRIX_PAGE_PRESENT			(1U << 0)
/* folio_is_longterm_pinnable(): yes, where PINNABLE_KNOWN is set */
#define PINMATRIX_PAGE_LONGTERM_PINNABLE	(1U << 1)
/* folio_maybe_dma_pinned(): a FOLL_PIN is (probably) held */
#define PINMATRIX_PAGE_MAYBE_DMA_PINNED		(1U << 2)
/* the shared zero page (is_zero_pfn()) */
#define PINMATRIX_PAGE_ZERO			(1U << 3)
/* migratetype was read (PINMATRIX_MT_UNKNOWN otherwise) */
#define PINMATRIX_PAGE_MT_KNOWN			(1U << 4)
/*
 * LONGTERM_PINNABLE is known. Unknown where the kernel's rule needs the
 * pageblock migratetype (CONFIG_CMA) and it could not be read.
 */
#define PINMATRIX_PAGE_PINNABLE_KNOWN		(1U << 5)
/*
 * With ZERO: this kernel's FOLL_PIN takes no pin on the zero page (6.5+ and
 * kernels that carry the change), so a pin on it shows nowhere.
 */
#define PINMATRIX_PAGE_ZERO_NOT_PINNED		(1U << 6)

/* What the module knows of one user page. 16 bytes. */
struct pinmatrix_page {
	__u64 pfn;		/* 0 when not present */
	__u8  zone;		/* enum pinmatrix_zone */
	__u8  migratetype;	/* enum pinmatrix_migratetype */
	__u16 flags;		/* PINMATRIX_PAGE_* */
	__u32 refcount;		/* page refcount, less the probe's own reference */
};

/*
 * struct pinmatrix_info.foll: the GUP flags whose values a trace's gup_flags
 * are decoded by, as the headers the module was built against define them
 * (0: not public in them; kernels that made them an enum have all of them,
 * internal ones too, in their BTF).
 */
enum pinmatrix_foll {
	PINMATRIX_FOLL_WRITE,
	PINMATRIX_FOLL_GET,
	PINMATRIX_FOLL_FORCE,
	PINMATRIX_FOLL_LONGTERM,
	PINMATRIX_FOLL_PIN,
	PINMATRIX_FOLL_SLOTS = 8
};

struct pinmatrix_info {
	__u32 size;			/* in: sizeof(struct pinmatrix_info) */
	__u32 abi_version;		/* out: PINMATRIX_ABI_VERSION */
	__u32 mt_method;		/* out: enum pinmatrix_mt_method */
	__u32 page_size;		/* out: PAGE_SIZE */
	__u64 max_pinned_pages;		/* out: per-file cap (module parameter) */
	__u64 pinned_pages;		/* out: pages this file holds now (pins given out) */
	__u32 foll[PINMATRIX_FOLL_SLOTS];	/* out: by enum pinmatrix_foll */
};

/* struct pinmatrix_probe.flags */
#define PINMATRIX_PROBE_FAULT	(1U << 0)	/* fault absent pages in (read) */

struct pinmatrix_probe {
	__u32 size;		/* in: sizeof(struct pinmatrix_probe) */
	__u32 flags;		/* in: PINMATRIX_PROBE_* */
	__u64 addr;		/* in: page aligned user address */
	__u64 npages;		/* in: 1 .. PINMATRIX_PROBE_MAX_PAGES */
	__u64 pages;		/* in: user pointer to npages struct pinmatrix_page */
};

#define PINMATRIX_PROBE_MAX_PAGES	(1ULL << 22)	/* 16 GiB of 4 KiB pages */

/* struct pinmatrix_pin.contract: the GUP contract of a held first pin. */
enum pinmatrix_contract {
	PINMATRIX_CONTRACT_GUP_REF		= 1,	/* get_user_pages_fast(): FOLL_GET */
	PINMATRIX_CONTRACT_FOLL_PIN		= 2,	/* pin_user_pages_fast() */
	PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM	= 3,	/* ... | FOLL_LONGTERM */
};

/*
 * Most pages one PINMATRIX_IOC_PIN may ask for, whatever the per-fd cap
 * (max_pinned_pages) says: more is -EINVAL, before anything is allocated.
 * 64 GiB of 4 KiB pages; the module's page array stays far below INT_MAX
 * bytes, where kvmalloc_array() refuses with a warning.
 */
#define PINMATRIX_PIN_MAX_PAGES		0x1000000ULL	/* 1 << 24 */

/* struct pinmatrix_pin.flags */
#define PINMATRIX_PIN_WRITE	(1U << 0)	/* FOLL_WRITE */
/*
 * Also hold each folio's lock until the pin is released, as a page under
 * I/O is held: a migration of the page waits for it with the folio isolated
 * from the LRU, so that a long-term pin of the page meanwhile cannot isolate
 * it (the race of 1aaf8c122918, by construction). Anonymous pages only (a
 * fault on a locked file page would wait for this pin); a folio already
 * locked, by anyone or twice in the range, is -EBUSY. The locks go by
 * themselves after the module parameter lock_max_ms (30 s), the pin stays:
 * a migration waits for them uninterruptibly, and its task must not be
 * stranded by a holder that cannot release them.
 */
#define PINMATRIX_PIN_LOCK	(1U << 1)

/*
 * PINMATRIX_IOC_PIN pins npages of the caller's own memory (current->mm).
 * A long-term pin (PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM) is charged to that
 * mm's pinned_vm (VmPin in /proc/PID/status), as ib_umem_get() charges a
 * registration: past RLIMIT_MEMLOCK (the caller's soft limit, in pages) it
 * fails with -ENOMEM unless the caller has CAP_IPC_LOCK. A short-term pin
 * and a reference are not charged, as no kernel pinner of those charges
 * them (nor the GPU host pin they stand for). The charge stays on the mm that
 * pinned until the pin is released (UNPIN, or the last close of the file),
 * also when the pin is released by another process sharing the file, or
 * after the pinning process has exited: a file inherited across fork or
 * passed over a socket is one pin table, and each of its pins is charged to
 * whichever process took it, under that process's limit.
 *
 * GUP is asked again for the rest after a short count, as ib_umem_get()
 * asks it: the error is the kernel's for the page it stopped at (-ENOMEM
 * where a page that must move for a long-term pin cannot), and pinned says
 * which page that was (the pages pinned before it), whatever page it is.
 *
 * A PIN waits (in GUP, faults, migration) holding no lock of the file:
 * other calls on the same file, from other threads or processes, go on,
 * and SIGKILL ends the wait (-EINTR where the ioctl still returns).
 *
 * Errors: -EINVAL bad size, contract, flags, alignment, or npages 0 or over
 * PINMATRIX_PIN_MAX_PAGES, or PINMATRIX_PIN_LOCK on a page that is not
 * anonymous; -EBUSY PINMATRIX_PIN_LOCK on a locked folio; -EFAULT a range
 * or pfns[] that is not user memory, or a fault writing pfns[] or id; GUP's
 * own error for a page it could not pin (nothing is kept, pinned says
 * which); -ENOSPC the file's pins would pass max_pinned_pages (INFO); -ENOMEM past RLIMIT_MEMLOCK without CAP_IPC_LOCK, or no memory;
 * -EINTR killed while waiting.
 */
struct pinmatrix_pin {
	__u32 size;		/* in: sizeof(struct pinmatrix_pin) */
	__u32 contract;		/* in: enum pinmatrix_contract */
	__u32 flags;		/* in: PINMATRIX_PIN_* */
	__u32 id;		/* out: pin id, > 0, valid until UNPIN or last close */
	__u64 addr;		/* in: page aligned user address */
	__u64 npages;		/* in: 1 .. PINMATRIX_PIN_MAX_PAGES, within the per-file cap */
	__u64 pfns;		/* in: user pointer to npages __u64; out: PFNs pinned */
	__u64 pinned;		/* out, once GUP ran: the pages it pinned (npages, or the
				 * index of the page whose error the PIN returns) */
};

struct pinmatrix_unpin {
	__u32 size;		/* in: sizeof(struct pinmatrix_unpin) */
	__u32 id;		/* in: id from PINMATRIX_IOC_PIN */
};

struct pinmatrix_pin_info {
	__u32 id;
	__u32 contract;
	__u32 flags;
	/*
	 * PINMATRIX_PIN_LOCK: of its folios, those a task waits to lock now
	 * (a migration of them, say); 0 for other pins.
	 */
	__u32 lock_waiters;
	__u64 addr;
	__u64 npages;
};

struct pinmatrix_list {
	__u32 size;		/* in: sizeof(struct pinmatrix_list) */
	__u32 count;		/* in: room in pins[]; out: pins this fd holds */
	__u64 pins;		/* in: user pointer to count struct pinmatrix_pin_info */
};

#define PINMATRIX_IOC_MAGIC	0xF7

#define PINMATRIX_IOC_INFO	_IOWR(PINMATRIX_IOC_MAGIC, 0x00, struct pinmatrix_info)
#define PINMATRIX_IOC_PROBE	_IOWR(PINMATRIX_IOC_MAGIC, 0x01, struct pinmatrix_probe)
#define PINMATRIX_IOC_PIN	_IOWR(PINMATRIX_IOC_MAGIC, 0x02, struct pinmatrix_pin)
#define PINMATRIX_IOC_UNPIN	_IOW(PINMATRIX_IOC_MAGIC, 0x03, struct pinmatrix_unpin)
#define PINMATRIX_IOC_LIST	_IOWR(PINMATRIX_IOC_MAGIC, 0x04, struct pinmatrix_list)

#endif /* _UAPI_PINMATRIX_H */
