// SPDX-License-Identifier: GPL-2.0
/*
 * ualink_sim: an accelerator's own memory. Its buffer objects (shmem GEM
 * objects that count their GEM handles: the last one's close revokes the
 * BO's UALink handle), the BO's PRIME dma-buf that a local import hands
 * out, and the model-only GEM ioctls: create in a domain, mmap offset,
 * info, evict.
 */

#include <linux/dma-buf.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_prime.h>

#include "ualink_sim.h"
#include "usim_drv.h"

/* Buffer objects */

static int usim_bo_open(struct drm_gem_object *obj, struct drm_file *file)
{
	mutex_lock(&usim_pod.lock);
	to_usim_bo(obj)->handles++;
	mutex_unlock(&usim_pod.lock);
	return 0;
}

/*
 * 6.1 has no callback for "GEM handle count reached 0" (the series adds
 * drm_gem_object_funcs.handle_free for it), but .open and .close run once
 * per handle: counting them gives the same moment.
 */
static void usim_bo_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct usim_bo *bo = to_usim_bo(obj);

	mutex_lock(&usim_pod.lock);
	if (bo->handles && !--bo->handles && bo->export &&
	    !usim_fault(UALINK_SIM_FAULT_NO_REVOKE_ON_CLOSE)) {
		if (usim_fault(UALINK_SIM_FAULT_LOCAL_IMPORT_REVOKED))
			usim_keep_revoked(bo->export);
		usim_export_destroy(bo->export);
	}
	mutex_unlock(&usim_pod.lock);
}

static void usim_bo_free(struct drm_gem_object *obj)
{
	bool counted = to_usim_bo(obj)->counted;

	drm_gem_shmem_free(to_drm_gem_shmem_obj(obj));
	if (counted)
		atomic64_dec(&usim_pod.bos);
}

static const struct drm_gem_object_funcs usim_bo_funcs = {
	.free = usim_bo_free,
	.open = usim_bo_open,
	.close = usim_bo_close,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = drm_gem_shmem_object_mmap,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

bool usim_is_bo(struct drm_gem_object *obj)
{
	return obj->funcs == &usim_bo_funcs;
}

struct drm_gem_object *usim_gem_create_object(struct drm_device *dev, size_t size)
{
	struct usim_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->base.base.funcs = &usim_bo_funcs;
	/* Remote stores go through kernel mappings: keep what they wrote. */
	bo->base.pages_mark_dirty_on_put = true;
	return &bo->base.base;
}

/* PRIME */

/* The GEM handle @file has for @obj, if any (the lowest). */
static bool usim_file_handle(struct drm_file *file, struct drm_gem_object *obj, u32 *handle)
{
	struct drm_gem_object *entry;
	bool found = false;
	int id;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, entry, id) {
		if (entry == obj) {
			*handle = id;
			found = true;
			break;
		}
	}
	spin_unlock(&file->table_lock);
	return found;
}

/*
 * The BO's own dma-buf, one per object, as PRIME export gives it. Where the
 * caller's file has a GEM handle of the BO and the kernel has
 * drm_gem_prime_handle_to_dmabuf() (6.10 on), through it: it records the
 * dma-buf with that handle in the file's PRIME cache, so that PRIME import of
 * it in that file gives the same handle back. A caller without a handle
 * (another file of this accelerator given the UALink handle) gets the
 * object's dma-buf as drm_gem_prime_handle_to_fd() makes it: exported once,
 * kept in obj->dma_buf while GEM handles exist; 6.1 has the helper only with
 * an fd installed at once, and its PRIME import is usim_prime_fd_to_handle().
 */
struct dma_buf *usim_bo_dmabuf(struct drm_file *file, struct drm_gem_object *obj)
{
	struct drm_device *dev = obj->dev;
	struct dma_buf *dmabuf;
#ifdef PM_HAVE_DRM_GEM_PRIME_HANDLE_TO_DMABUF
	u32 handle;

	if (usim_file_handle(file, obj, &handle)) {
		dmabuf = drm_gem_prime_handle_to_dmabuf(dev, file, handle, O_RDWR);
		/* The caller closed the handle and made another under it. */
		if (!IS_ERR(dmabuf) && dmabuf->priv != obj) {
			dma_buf_put(dmabuf);
			dmabuf = ERR_PTR(-ENOENT);
		}
		return dmabuf;
	}
#endif
	mutex_lock(&dev->object_name_lock);
	if (obj->dma_buf) {
		dmabuf = obj->dma_buf;
		get_dma_buf(dmabuf);
	} else if (!obj->handle_count) {
		dmabuf = ERR_PTR(-ENOENT);
	} else {
		dmabuf = drm_gem_prime_export(obj, O_RDWR);
		if (!IS_ERR(dmabuf)) {
			/* Cached as drm_gem_prime_handle_to_fd() caches it. */
			obj->dma_buf = dmabuf;
			get_dma_buf(dmabuf);
		}
	}
	mutex_unlock(&dev->object_name_lock);
	return dmabuf;
}

#ifndef PM_HAVE_DRM_GEM_PRIME_HANDLE_TO_DMABUF
/*
 * 6.1: a local import cannot fill the file's PRIME cache without installing
 * an fd, so PRIME import of a BO's own dma-buf of this device gives the
 * handle the file already has of it; anything else is
 * drm_gem_prime_fd_to_handle()'s. drm_gem_dmabuf_release() as release means
 * priv is a GEM object, held by the dma-buf.
 */
int usim_prime_fd_to_handle(struct drm_device *dev, struct drm_file *file, int fd, u32 *handle)
{
	struct drm_gem_object *obj;
	struct dma_buf *dmabuf;
	bool found = false;

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (dmabuf->ops->release == drm_gem_dmabuf_release) {
		obj = dmabuf->priv;
		if (obj->dev == dev && usim_is_bo(obj) && obj->dma_buf == dmabuf)
			found = usim_file_handle(file, obj, handle);
	}
	dma_buf_put(dmabuf);
	if (found)
		return 0;
	return drm_gem_prime_fd_to_handle(dev, file, fd, handle);
}
#endif

/* Model-only ioctls */

int usim_gem_create_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_gem_create *args = data;
	struct drm_gem_shmem_object *shmem;
	struct usim_bo *bo;
	int ret;

	/* pad too: a field that may get a meaning later must be 0 now. */
	if (!args->size || args->size > UALINK_SIM_BO_MAX_SIZE || args->flags || args->pad)
		return -EINVAL;
	if (!args->domains ||
	    args->domains & ~(UALINK_SIM_DOMAIN_GTT | UALINK_SIM_DOMAIN_VRAM))
		return -EINVAL;

	shmem = drm_gem_shmem_create(dev, args->size);
	if (IS_ERR(shmem))
		return PTR_ERR(shmem);
	bo = to_usim_bo(&shmem->base);
	bo->domains = args->domains;
	bo->counted = true;
	atomic64_inc(&usim_pod.bos);
	ret = drm_gem_handle_create(file, &shmem->base, &args->handle);
	drm_gem_object_put(&shmem->base);
	return ret;
}

int usim_gem_mmap_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_gem_mmap *args = data;
	struct drm_gem_object *obj;
	int ret = 0;

	if (args->pad)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	if (!usim_is_bo(obj) || obj->import_attach)
		ret = -EPERM;
	else
		args->offset = drm_vma_node_offset_addr(&obj->vma_node);
	drm_gem_object_put(obj);
	return ret;
}

int usim_gem_info_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_gem_info *args = data;
	struct drm_gem_object *obj;
	struct usim_bo *bo;
	u32 handle = args->handle;

	obj = drm_gem_object_lookup(file, handle);
	if (!obj)
		return -ENOENT;
	memset(args, 0, sizeof(*args));
	args->handle = handle;
	args->size = obj->size;
	if (usim_is_attached(obj)) {
		bool mapped;
		u32 notices;

		usim_attached_state(obj, &mapped, &notices);
		args->kind = UALINK_SIM_GEM_KIND_ATTACHED;
		args->pins = mapped;
		args->moves = notices;
		args->revoked = notices > 0;
		drm_gem_object_put(obj);
		return 0;
	}
	mutex_lock(&usim_pod.lock);
	if (usim_is_remote(obj)) {
		args->kind = UALINK_SIM_GEM_KIND_REMOTE;
		args->revoked = !to_usim_remote(obj)->imp;
	} else if (usim_is_bo(obj)) {
		bo = to_usim_bo(obj);
		args->kind = UALINK_SIM_GEM_KIND_BO;
		args->domains = bo->domains;
		args->pins = bo->pins;
		args->moves = bo->moves;
		args->exported = !!bo->export;
		args->handles = bo->handles;
	}
	mutex_unlock(&usim_pod.lock);
	drm_gem_object_put(obj);
	return 0;
}

/* What TTM eviction would do to a BO under memory pressure. */
int usim_gem_evict_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_gem_evict *args = data;
	struct drm_gem_object *obj;
	struct usim_bo *bo;
	int ret = 0;

	if (args->pad)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	if (!usim_is_bo(obj) || obj->import_attach) {
		drm_gem_object_put(obj);
		return -EINVAL;
	}
	bo = to_usim_bo(obj);
	mutex_lock(&usim_pod.lock);
	if (bo->pins)
		ret = -EBUSY;
	else
		bo->moves++;
	mutex_unlock(&usim_pod.lock);
	drm_gem_object_put(obj);
	return ret;
}
