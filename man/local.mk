# man/: manual pages.
dist_man_MANS += man/wafer.conf.5
