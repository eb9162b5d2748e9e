# plugins/levelzero: wired into configure (--enable-levelzero / --disable-levelzero, detected
# automatically); the plugin itself arrives with its own issue. Until then
# this directory builds nothing and wafer-info reports "levelzero: not found".
if WAFER_LEVELZERO
endif
