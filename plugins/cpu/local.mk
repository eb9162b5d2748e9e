# plugins/cpu: the reference plugin (see wafer-plugin(7)).
