# plugins/cuda: wired into configure (--enable-cuda / --disable-cuda, detected
# automatically); the plugin itself arrives with its own issue. Until then
# this directory builds nothing and wafer-info reports "cuda: not found".
if WAFER_CUDA
endif
