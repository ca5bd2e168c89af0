# tests/slurm.cmake - the fleet on a Slurm test cluster (tests/slurm/): one
# slurmctld and three slurmd on loopback, contrib/slurm/wavedd.sbatch,
# fleet jobs against one daemon's bits, a node killed and a device faulted,
# a node whose port is taken (the batch fails at once, naming it).
# Needs root (slurmd) and slurm-wlm + munge (.ci/deps.sh); skipped (77)
# when not root.
if(TARGET wavedd AND TARGET wavectl AND TARGET wavedd-test)
  add_test(NAME slurm_fleet
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/slurm/fleet_test.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(slurm_fleet PROPERTIES
    LABELS "slurm;root" TIMEOUT 900 RUN_SERIAL TRUE)
  wave_skippable(slurm_fleet)
endif()
