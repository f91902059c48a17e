output "service_monitor" {
  value = module.dcgm_monitoring.service_monitor
}

output "job_name" {
  value = module.dcgm_monitoring.job_name
}

output "metrics" {
  value       = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS"]
  description = "The key series to chart and alert on; under time-slicing they are per GPU, not per pod."
}
