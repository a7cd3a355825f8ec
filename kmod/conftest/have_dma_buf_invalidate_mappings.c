// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_DMA_BUF_INVALIDATE_MAPPINGS: dma_buf_invalidate_mappings() (the 2026 revoke series) */
/* An importer's callback is dma_buf_attach_ops.invalidate_mappings there, .move_notify before. */
#include <linux/dma-buf.h>

static void pm_invalidate(struct dma_buf_attachment *attach)
{
}

static const struct dma_buf_attach_ops pm_ops = {
	.invalidate_mappings = pm_invalidate,
};

const struct dma_buf_attach_ops *pm_conftest(struct dma_buf *dmabuf);
const struct dma_buf_attach_ops *pm_conftest(struct dma_buf *dmabuf)
{
	dma_buf_invalidate_mappings(dmabuf);
	return &pm_ops;
}
