"""Live environments: the dataset's tasks served over OpenEnv, in sandboxes of a pool.

* :mod:`repogym.envs.models` -- the typed actions, observations and state;
* :mod:`repogym.envs.episode` -- one task's broken state in a sandbox, history hidden;
* :mod:`repogym.envs.environment` -- the OpenEnv environment (one episode per session);
* :mod:`repogym.envs.journal` -- every ended episode's reward, on disk first;
* :mod:`repogym.envs.server` -- ``repogym env serve``.
"""
