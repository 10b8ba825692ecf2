from capicua.bots.easy import EasyBot
from capicua.client import Bot


class Easy(Bot):
    def __init__(self):
        super().__init__()
        self.easy = EasyBot()

    def choose(self, observation, legal_actions):
        return self.easy.choose(observation, legal_actions)
