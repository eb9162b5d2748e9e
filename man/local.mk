# man/: manual pages.
dist_man_MANS += man/wafer-info.1
dist_man_MANS += man/wafer.conf.5

# ops.h (wafer_ops(3), one page for the header; the other names are .so
# links to it) and the donation rules (wafer-donation(7)).
dist_man_MANS += man/wafer_ops.3 man/wafer-donation.7
dist_man_MANS += \
	man/wafer_op_fill.3 \
	man/wafer_op_copy.3 \
	man/wafer_op_cast.3 \
	man/wafer_op_unary.3 \
	man/wafer_op_binary.3 \
	man/wafer_op_binary_scalar.3 \
	man/wafer_op_reduce.3 \
	man/wafer_op_softmax.3 \
	man/wafer_op_matmul.3 \
	man/wafer_tensor_view.3 \
	man/wafer_tensor_empty.3 \
	man/wafer_tensor_create.3 \
	man/wafer_tensor_read.3 \
	man/wafer_tensor_release.3 \
	man/wafer_tensor_transpose.3 \
	man/wafer_tensor_reshape.3 \
	man/wafer_tensor_slice.3 \
	man/wafer_tensor_count.3 \
	man/wafer_dtype_size.3 \
	man/wafer_handle_references.3
