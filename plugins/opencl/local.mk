# plugins/opencl: wired into configure (--enable-opencl / --disable-opencl, detected
# automatically); the plugin itself arrives with its own issue. Until then
# this directory builds nothing and wafer-info reports "opencl: not found".
if WAFER_OPENCL
endif
